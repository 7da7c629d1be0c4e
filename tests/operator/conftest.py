"""Two real PostgreSQL servers for the operator: the suite's one (labelled test) and a prod one."""

import tempfile
from pathlib import Path

import pytest

from engram.runtime import bootstrap_database
from engram.store.embedded import EmbeddedPostgres
from engram_operator.config import Instance


@pytest.fixture(scope="session")
async def prod_dsn():
    root = Path(tempfile.mkdtemp(prefix="engram-test-prod-pg-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root)
    dsn = server.start()
    await bootstrap_database(dsn, "prod")
    yield dsn
    server.destroy()


@pytest.fixture(scope="session")
def test_instance(bootstrapped) -> Instance:
    return Instance(name="pg-test", environment="test", adminDsn=bootstrapped)


@pytest.fixture(scope="session")
def prod_instance(prod_dsn) -> Instance:
    return Instance(name="pg-prod", environment="prod", adminDsn=prod_dsn)
