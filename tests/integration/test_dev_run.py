"""`make run` runs `engram dev`: from an empty directory to a working MCP URL and key, and back."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.store.embedded import EmbeddedPostgres
from tests.conftest import free_port

SERVICE_ONLY = Path(__file__).parent.parent / "service_only"


def wait_for_line(proc: subprocess.Popen, pattern: str, timeout: float = 120) -> str:
    """Read the process's output until a line matches; return everything read."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if re.search(pattern, line):
            return "".join(seen)
    raise AssertionError(f"no line matching {pattern!r}; output:\n{''.join(seen)}")


async def test_dev_prints_a_working_mcp_url_and_key_and_stops_its_database():
    workdir = Path(tempfile.mkdtemp(prefix="engram-dev-"))
    workdir.chmod(0o755)  # the embedded server's user must reach .state inside it
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
        "ENGRAM_PORT": str(port),
        "ENGRAM_STATE_DIR": str(workdir / ".state"),
        "PYTHONPATH": str(SERVICE_ONLY),  # as `make run` installs it: none of the extras
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram", "dev"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output = wait_for_line(proc, r"Uvicorn running")
        url = re.search(r"MCP URL \(streamable HTTP\): (\S+)", output).group(1)
        key = re.search(r"API key:\s+(\S+)", output).group(1)
        assert url == f"http://127.0.0.1:{port}/t/default/mcp"
        transport = streamable_http_client(
            url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
        )
        async with Client(transport) as client:
            written = await client.call_tool("write_memory", {"content": "The user prefers window seats"})
            assert written.structured_content["outcome"] == "created"
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"http://127.0.0.1:{port}/t/default/v1/search",
                json={"query": "seat preference"},
                headers={"Authorization": f"Bearer {key}"},
            )
        assert response.json()["hits"][0]["memory"]["content"] == "The user prefers window seats"
        assert (workdir / ".state" / "default-tenant.key").read_text().strip() == key
        # The service's sessions come through the Unix socket (a cheaper round trip than TCP).
        database = await asyncpg.connect(EmbeddedPostgres(workdir / ".state" / "postgres").dsn())
        try:
            addresses = await database.fetch(
                "SELECT client_addr FROM pg_stat_activity WHERE application_name = 'engram' AND pid <> pg_backend_pid()"
            )
        finally:
            await database.close()
        assert addresses and all(a["client_addr"] is None for a in addresses)
        # Another shell, without ENGRAM_PORT: the new tenant's URLs are the running service's.
        elsewhere = {k: v for k, v in env.items() if k != "ENGRAM_PORT"}
        created = subprocess.run(
            [sys.executable, "-m", "engram", "tenant", "create", "second"],
            env=elsewhere,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert f"mcp url:  http://127.0.0.1:{port}/t/second/mcp" in created.stdout, created
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert not (workdir / ".state" / "postgres" / "data" / "postmaster.pid").exists()
    assert not (workdir / ".state" / "serving.json").exists()  # withdrawn when the service stops


@pytest.mark.parametrize("command", ["dev", "serve"])
def test_a_taken_port_stops_the_start_before_its_banner_and_leaves_the_other_instance_alone(command):
    workdir = Path(tempfile.mkdtemp(prefix="engram-taken-"))
    state = workdir / ".state"
    state.mkdir()
    record = state / "serving.json"  # the running instance's, with a live pid (this process)
    record.write_text(json.dumps({"url": "http://127.0.0.1:8080", "pid": os.getpid()}))
    before = record.read_text()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
            "ENGRAM_PORT": str(port),
            "ENGRAM_STATE_DIR": str(state),
        }
        done = subprocess.run(
            [sys.executable, "-m", "engram", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 2, done
    assert f"error: port {port} on 127.0.0.1 is in use" in done.stderr
    assert f"ENGRAM_PORT={port + 1}" in done.stderr
    assert "Traceback" not in done.stderr
    assert "API key" not in done.stdout and "starting" not in done.stdout
    assert record.read_text() == before  # the other instance's record is untouched
    assert not (state / "postgres").exists()  # nothing was started
