"""Shared fixtures: a real PostgreSQL with pgvector (embedded, started here), Redis, a running service.

Set ENGRAM_TEST_DATABASE_URL to use an existing PostgreSQL (with pgvector) instead of the embedded one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from engram.api.app import create_app
from engram.api.server import server_config
from engram.domain.tenancy import TenantContext
from engram.runtime import Engram, bootstrap_database, open_engram
from engram.settings import LifecycleSettings, Settings
from engram.store.embedded import EmbeddedPostgres, wait_for_port

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unique_tenant(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    external = os.environ.get("ENGRAM_TEST_DATABASE_URL")
    if external:
        yield external
        return
    root = Path(tempfile.mkdtemp(prefix="engram-test-pg-"))
    root.chmod(0o755)  # the unprivileged server user must reach its data dir
    server = EmbeddedPostgres(root)
    try:
        yield server.start()
    finally:
        server.destroy()


@pytest.fixture(scope="session")
async def bootstrapped(pg_dsn: str) -> str:
    await bootstrap_database(pg_dsn, "test")
    return pg_dsn


@pytest.fixture(scope="session")
def settings(bootstrapped: str) -> Settings:
    # No lifecycle scheduler: it would run, every ten minutes, over every tenant in the database,
    # other tests' included (their rows change under them); tests call scheduler.run_once instead.
    lifecycle = LifecycleSettings(scheduler_enabled=False)
    return Settings(
        database_url=bootstrapped, environment="test", state_dir=Path(tempfile.mkdtemp()), lifecycle=lifecycle
    )


@pytest.fixture(scope="session")
async def engram(settings: Settings, bootstrapped: str) -> AsyncIterator[Engram]:
    opened = await open_engram(settings, bootstrapped)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def tenant(engram: Engram) -> tuple[TenantContext, str]:
    """A fresh tenant (context, API key) per test: tests never see each other's memories."""
    return await engram.tenants.create(unique_tenant())


class ServerThread:
    """The real ASGI app under uvicorn on a free port, in a thread of its own."""

    def __init__(self, settings: Settings, dsn: str) -> None:
        self.port = free_port()
        config = server_config(
            create_app(settings, dsn), settings, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the engram service did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def tenant_api(service: ServerThread, tenant: str, key: str) -> httpx.AsyncClient:
    """A REST client of one tenant, with its key."""
    return httpx.AsyncClient(
        base_url=f"{service.url}/t/{tenant}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


@pytest.fixture(scope="session")
def service(settings: Settings, bootstrapped: str) -> Iterator[ServerThread]:
    with ServerThread(settings, bootstrapped) as running:
        yield running


def _redis_reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The Redis on 6379, else one started here from redis-server, else the test is skipped."""
    if _redis_reachable(6379):
        yield "redis://127.0.0.1:6379/15"
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no Redis on 127.0.0.1:6379 and no redis-server installed")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port("127.0.0.1", port, timeout=10)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
