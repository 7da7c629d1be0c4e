"""The MCP Inspector CLI (npm, a client nobody here wrote) against the real service."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, unique_tenant

pytestmark = pytest.mark.npm

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
NPM_DIR = ROOT / ".state" / "npm"


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The Inspector's CLI, installed once into .state/npm (skipped where npm cannot install it)."""
    binary = NPM_DIR / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return binary
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("Node.js and npm are needed for the MCP Inspector CLI")
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            "npm",
            "install",
            "--prefix",
            str(NPM_DIR),
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            INSPECTOR,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0 or not binary.exists():
        pytest.skip(f"could not install {INSPECTOR} from the npm registry: {result.stderr.strip()[-300:]}")
    return binary


def run_inspector(binary: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), "--cli", *args, "--format", "json", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin:/usr/local/bin"},
        stdin=subprocess.DEVNULL,
    )


async def test_inspector_lists_calls_and_lints_tools(service, engram, inspector, tmp_path):
    name = unique_tenant("insp")
    _, key = await engram.tenants.create(name)
    url = f"{service.url}/t/{name}/mcp"
    auth = ("--header", f"Authorization: Bearer {key}")

    listed = run_inspector(inspector, tmp_path, url, "--method", "tools/list", "--strict", *auth)
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["result"]["tools"]}
    assert {"write_memory", "search_memory", "forget_memory"} <= names

    written = run_inspector(
        inspector,
        tmp_path,
        url,
        "--method",
        "tools/call",
        "--tool-name",
        "write_memory",
        "--tool-arg",
        "content=用户偏好顺丰快递",
        "--tool-arg",
        "type=preference",
        *auth,
    )
    assert written.returncode == 0, written.stderr
    memory_id = json.loads(written.stdout)["result"]["structuredContent"]["memory"]["id"]

    found = run_inspector(
        inspector,
        tmp_path,
        url,
        "--method",
        "tools/call",
        "--tool-name",
        "search_memory",
        "--tool-arg",
        "query=快递",
        *auth,
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["result"]["structuredContent"]["hits"]
    assert hits[0]["id"] == memory_id

    refused = run_inspector(
        inspector,
        tmp_path,
        url,
        "--method",
        "tools/list",
        "--header",
        f"Authorization: Bearer ek.{name}.wrong",
    )
    assert refused.returncode != 0
