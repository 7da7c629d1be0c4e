"""The README's client configurations, run as written: each stdio command started from another
directory, each HTTP URL reached with its header."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import ROOT, unique_tenant

SNIPPETS = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", (ROOT / "README.md").read_text(), re.S)]


def servers() -> list[dict]:
    found = [s.get("mcpServers", s.get("servers", {})).get("engram") for s in SNIPPETS]
    return [f for f in found if f]


def test_the_readme_has_the_three_clients():
    kinds = sorted("url" if "url" in s else "stdio" for s in servers())
    assert kinds == ["stdio", "stdio", "url"]


@pytest.mark.parametrize("index", [i for i, s in enumerate(servers()) if "command" in s])
async def test_a_stdio_configuration_runs_as_written_from_elsewhere(index):
    server = servers()[index]
    command = server["command"].replace("/path/to/engram", str(ROOT))
    root = Path(tempfile.mkdtemp(prefix="engram-client-"))
    root.chmod(0o755)  # the embedded server's user must reach the state directory
    (root / "state").mkdir()
    (root / "elsewhere").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
        "ENGRAM_STATE_DIR": str(root / "state")
    }
    try:
        params = StdioServerParameters(command=command, args=server["args"], env=env, cwd=root / "elsewhere")
        async with Client(params) as client:
            written = await client.call_tool("write_memory", {"content": "The user's bike is blue"})
            assert written.structured_content["outcome"] == "created"
            found = await client.call_tool("search_memory", {"query": "what colour is the bike"})
            assert found.structured_content["hits"][0]["content"] == "The user's bike is blue"
    finally:
        subprocess.run([sys.executable, "-m", "engram", "db", "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


async def test_the_http_configuration_reaches_the_service(service, engram):
    """As written, but for the test service's address and a tenant of its own."""
    (server,) = [s for s in servers() if "url" in s]
    name = unique_tenant("readme")
    _, key = await engram.tenants.create(name)
    url = server["url"].replace("http://127.0.0.1:8080", service.url).replace("/t/default/", f"/t/{name}/")
    headers = {k: v.replace("<key>", key) for k, v in server["headers"].items()}
    async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers))) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= {"remember", "search_memory"}


@pytest.mark.npm
async def test_the_mcp_remote_line_runs_as_written_without_a_terminal(service, engram, tmp_path):
    """npx as a desktop client starts it: no TTY, an empty npm cache (so it must install), and
    npm's yes=false (a newcomer's setting that made the line without -y abort)."""
    if shutil.which("npx") is None:
        pytest.skip("Node.js and npx are needed for mcp-remote")
    readme = " ".join((ROOT / "README.md").read_text().split())
    line = re.search(r'`"command": "npx", "args": (\[.*?\])`', readme)
    assert line, "the README's mcp-remote line"
    name = unique_tenant("readme")
    _, key = await engram.tenants.create(name)
    args = [
        a.replace("http://127.0.0.1:8080", service.url).replace("/t/default/", f"/t/{name}/").replace("<key>", key)
        for a in json.loads(line.group(1))
    ]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "npm_config_cache": str(tmp_path / "npm"),
        "npm_config_yes": "false",
    }
    async with Client(StdioServerParameters(command="npx", args=args, env=env, cwd=tmp_path)) as client:
        written = await client.call_tool("write_memory", {"content": "The user's kayak is red"})
        assert written.structured_content["outcome"] == "created", written
