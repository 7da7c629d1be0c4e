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


def auth_failure(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The Inspector's error envelope (one JSON line on stderr) for a connection it could not make."""
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)  # its auth_required
    error: dict[str, object] = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "auth_required"
    return error


# What the Inspector says when it takes a refusal for "start OAuth" (a 401 makes it do so).
OAUTH_FLOW = ("Interactive OAuth", "TTY", "Client Registration", "stored-auth")


async def test_inspector_lists_and_calls_tools(service, engram, inspector, tmp_path):
    name = unique_tenant("insp")
    _, key = await engram.tenants.create(name)
    url = f"{service.url}/t/{name}/mcp"
    auth = ("--header", f"Authorization: Bearer {key}")

    listed = run_inspector(inspector, tmp_path, url, "--method", "tools/list", *auth)
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


async def test_inspector_strict_finds_no_warning_in_the_tool_schemas(service, engram, inspector, tmp_path):
    """``--strict`` is the Inspector's lint (of tools/list only): each tool's input and output schema
    for portability (bare boolean schemas are errors; type unions, remote $refs and schemas that
    constrain nothing are warnings). It exits 6 on an error only, so a warning is caught here: it
    comes as ``schemaFindings`` in the JSON envelope and as a report on stderr, even with -q."""
    name = unique_tenant("insp")
    _, key = await engram.tenants.create(name)
    for path in ("mcp", "sse"):
        url = f"{service.url}/t/{name}/{path}"
        linted = run_inspector(
            inspector, tmp_path, url, "--method", "tools/list", "--strict", "--header", f"Authorization: Bearer {key}"
        )
        assert linted.returncode == 0, linted.stderr
        envelope = json.loads(linted.stdout)
        assert "schemaFindings" not in envelope, envelope["schemaFindings"]
        assert linted.stderr.strip() == ""
        assert len(envelope["result"]["tools"]) >= 11


async def test_inspector_names_a_refused_key_instead_of_starting_oauth(service, engram, inspector, tmp_path):
    """The Inspector, like every MCP client, takes a 401 for "start OAuth" (it used to answer a wrong
    key with "Interactive OAuth requires a TTY..." or, on a terminal, a failed client registration).
    engram has no OAuth: a key it refuses is a 403 whose message names the key and the header."""
    name = unique_tenant("insp")
    _, other_key = await engram.tenants.create(unique_tenant("insp-other"))
    url = f"{service.url}/t/{name}/mcp"
    await engram.tenants.create(name)

    for key, problem in (
        (f"ek.{name}.wrong", "invalid API key"),
        ("not-a-key", "malformed API key"),
        (other_key, "does not grant access to tenant"),
    ):
        refused = run_inspector(
            inspector, tmp_path, url, "--method", "tools/list", "--header", f"Authorization: Bearer {key}"
        )
        error = auth_failure(refused)
        message = str(error["message"])
        assert error.get("status") == 403, error
        assert problem in message and "'Authorization: Bearer <key>'" in message, message
        assert not any(phrase in message for phrase in OAUTH_FLOW), message
        assert key not in message

    over_sse = run_inspector(
        inspector,
        tmp_path,
        f"{service.url}/t/{name}/sse",
        "--method",
        "tools/list",
        "--header",
        f"Authorization: Bearer ek.{name}.wrong",
    )
    error = auth_failure(over_sse)  # an SSE client cannot read the body: the status at least
    assert error.get("status") == 403 and not any(phrase in str(error["message"]) for phrase in OAUTH_FLOW), error

    # No key at all stays a 401 with its Bearer challenge (HTTP's answer to missing credentials),
    # so the Inspector offers OAuth; in its non-interactive mode it shows engram's message.
    missing = run_inspector(inspector, tmp_path, url, "--method", "tools/list", "--stored-auth-only")
    message = str(auth_failure(missing)["message"])
    assert "missing API key" in message and "'Authorization: Bearer <key>'" in message, message
