"""What the benchmarks that measure a running service share: their own embedded PostgreSQL, and
`engram serve` on it in a process of its own (the real server config)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from engram.runtime import bootstrap_database
from engram.settings import Settings
from engram.store.embedded import EmbeddedPostgres, _free_port, wait_for_port


@contextlib.contextmanager
def own_database(prefix: str) -> Iterator[str]:
    """A new embedded PostgreSQL, bootstrapped; yields its DSN (the Unix socket, as `make run`
    reaches it) and stops it after."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)  # the database's own user must reach it
    server = EmbeddedPostgres(root)
    server.start()
    try:
        dsn = server.dsn(via_socket=True)
        asyncio.run(bootstrap_database(dsn, Settings(database_url=dsn).environment))
        yield dsn
    finally:
        server.stop()


@contextlib.contextmanager
def serving(dsn: str, **settings: str) -> Iterator[str]:
    """`engram serve` on the database, with ENGRAM_<NAME> settings; yields its URL."""
    port = _free_port()
    env = {**os.environ, "ENGRAM_DATABASE_URL": dsn, "ENGRAM_PORT": str(port), "ENGRAM_LOG_LEVEL": "error"}
    env |= {f"ENGRAM_{name.upper()}": value for name, value in settings.items()}
    process = subprocess.Popen(
        [sys.executable, "-m", "engram", "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port("127.0.0.1", port, timeout=120)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=60)
