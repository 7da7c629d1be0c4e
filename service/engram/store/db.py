"""The asyncpg pool: vector and jsonb codecs, and a search_path with no tables on it."""

from __future__ import annotations

import json
import logging

import asyncpg
from pgvector.asyncpg import register_vector

from engram.errors import ConfigurationError


async def _init_connection(conn: asyncpg.Connection) -> None:
    try:
        await register_vector(conn)
    except ValueError:  # "unknown type: public.vector"
        raise ConfigurationError(
            "the database has no pgvector extension: run `engram migrate` (it creates it)"
        ) from None
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _nothing_to_reset(conn: asyncpg.Connection) -> None:
    """Nothing outlives a request on a connection (settings are SET LOCAL, advisory locks are held by
    transactions, nobody LISTENs: tests/unit/test_no_session_state.py), so a released connection
    skips asyncpg's reset statement, a round trip per request; an open transaction is still rolled back."""


async def create_pool(dsn: str, min_size: int = 1, max_size: int = 10, ef_search: int = 64) -> asyncpg.Pool:
    """A pool whose sessions see only ``public`` (the extensions): every table must be schema-qualified."""
    logging.getLogger("asyncpg.pool").addFilter(_OUTAGE_RETRIES)
    return await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        reset=_nothing_to_reset,
        server_settings={
            "search_path": "public",
            "application_name": "engram",
            "hnsw.ef_search": str(ef_search),
            # With filters (status, type...), keep scanning the graph until enough rows pass.
            "hnsw.iterative_scan": "relaxed_order",
        },
        command_timeout=60,
    )


async def ensure_extensions(dsn: str) -> None:
    """Create pgvector before any pool registers its codec (needs a privileged role, once per database)."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    finally:
        await conn.close()


# Failures that mean the database cannot be reached now (down, restarting, out of connections),
# as opposed to a statement it refused.
_UNREACHABLE = (
    OSError,
    TimeoutError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.InterfaceError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.TooManyConnectionsError,
)


def unreachable(exc: BaseException) -> bool:
    """Whether a failure means the database is out of reach, not that a statement was wrong."""
    return isinstance(exc, _UNREACHABLE)


class _OutageRetries(logging.Filter):
    """asyncpg logs a traceback each time it retries keeping the pool's floor of connections while
    the database is away; the service's own warning says so once per outage."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.exc_info[1] is not None and unreachable(record.exc_info[1]))


_OUTAGE_RETRIES = _OutageRetries()
