"""`make run` reaches its embedded PostgreSQL through the Unix socket (a cheaper round trip than
loopback TCP), and falls back to TCP where the socket's path would be too long."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import asyncpg
import pytest

from engram.store.embedded import EmbeddedPostgres


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedPostgres]:
    root = Path(tempfile.mkdtemp(prefix="engram socket pg "))  # a space: quoted for pg_ctl and in the DSN
    root.chmod(0o755)  # the unprivileged server user must reach its data directory
    server = EmbeddedPostgres(root)
    server.start()
    try:
        yield server
    finally:
        server.destroy()


@pytest.mark.parametrize("via_socket", [True, False])
async def test_the_dsn_reaches_the_server_by_the_way_asked(server, via_socket):
    dsn = server.dsn(via_socket=via_socket)
    conn = await asyncpg.connect(dsn)
    try:
        # No client address: the session came through a Unix socket.
        assert await conn.fetchval("SELECT inet_client_addr() IS NULL") is via_socket
    finally:
        await conn.close()


def test_a_socket_path_too_long_for_the_kernel_falls_back_to_tcp(server, tmp_path):
    deep = EmbeddedPostgres(tmp_path / ("d" * 120))
    deep.root.mkdir(parents=True)
    (deep.root / "password").write_text("secret")
    (deep.root / "port").write_text("5999")
    (deep.root / "data").mkdir()
    assert deep.dsn(via_socket=True) == deep.dsn() == "postgresql://engram:secret@127.0.0.1:5999/engram"
    assert f"host={quote(str(server.data_dir))}&" in server.dsn(via_socket=True)


def test_a_comma_in_the_path_falls_back_to_tcp(tmp_path):
    """A comma separates hosts in a DSN: the socket directory would be read as two hosts."""
    odd = EmbeddedPostgres(tmp_path / "a,b")
    (odd.data_dir).mkdir(parents=True)
    (odd.root / "password").write_text("secret")
    (odd.root / "port").write_text("5999")
    assert odd.dsn(via_socket=True) == "postgresql://engram:secret@127.0.0.1:5999/engram"
