"""The asyncpg pools: vector and jsonb codecs, and a search_path with no tables on it. Besides the
main pool, a few connections whose planner walks HNSW indexes serve the nearest-neighbour queries."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable

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


# Vectors live out of line (TOAST), which the planner does not price: it would rather scan the
# table, or a btree, and sort every row by distance (~50-100 ms at 10k memories) than walk the HNSW
# index (~1 ms). Every plan but the index walk needs a scan of the table and a sort.
WALK_THE_INDEX = {"enable_seqscan": "off", "enable_sort": "off"}
WALK_THE_INDEX_IN_TRANSACTION = "SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off"
NEAREST_POOL_NAME = "engram-nearest"


async def create_pool(
    dsn: str,
    min_size: int = 1,
    max_size: int = 10,
    ef_search: int = 64,
    planner: dict[str, str] | None = None,
    name: str = "engram",
    connected: Callable[[], None] = lambda: None,
) -> asyncpg.Pool:
    """A pool whose sessions see only ``public`` (the extensions): every table must be schema-qualified.
    ``planner``: settings of its sessions' planner (WALK_THE_INDEX for the nearest-neighbour pool);
    ``name``: their application_name in pg_stat_activity; ``connected``: called for each new
    connection (the first after an outage says the database is back: an outage closes every
    connection it meets)."""
    logging.getLogger("asyncpg.pool").addFilter(_OUTAGE_RETRIES)

    async def init(conn: asyncpg.Connection) -> None:
        await _init_connection(conn)
        connected()

    return await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=init,
        reset=_nothing_to_reset,
        server_settings={
            "search_path": "public",
            "application_name": name,
            "hnsw.ef_search": str(ef_search),
            # With filters (status, type...), keep scanning the graph until enough rows pass.
            "hnsw.iterative_scan": "relaxed_order",
            **(planner or {}),
        },
        command_timeout=60,
    )


def nearest_share(max_size: int) -> int:
    """The connections of a process's budget kept for nearest-neighbour queries: a third of it, none
    under three (the main pool's connections then serve them, see NearestPool)."""
    return max_size // 3


@contextlib.asynccontextmanager
async def walking_the_index(conn: asyncpg.Connection) -> AsyncIterator[asyncpg.Connection]:
    """A connection already held, set up for a nearest-neighbour query: in a transaction of its own
    or in the one it is in (where the setting then lasts until that one ends)."""
    async with contextlib.nullcontext() if conn.is_in_transaction() else conn.transaction():
        await conn.execute(WALK_THE_INDEX_IN_TRANSACTION)
        yield conn


class NearestPool:
    """Connections for a nearest-neighbour query, its planner set to walk the HNSW index.

    Connections of their own, opened with WALK_THE_INDEX, answer in one round trip. Setting it per
    query on a main pool connection takes four (BEGIN, SET LOCAL, the query, COMMIT): on the search
    path that was ~0.25 ms of the event loop's time and ~0.5 ms of latency a search. With a budget
    too small to share (nearest_share), the main pool serves them that way."""

    def __init__(self, main: asyncpg.Pool, own: asyncpg.Pool | None) -> None:
        self._main = main
        self._own = own

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        if self._own is not None:
            async with self._own.acquire() as conn:
                yield conn
            return
        async with self._main.acquire() as conn, walking_the_index(conn):
            yield conn

    @property
    def has_own_connections(self) -> bool:
        return self._own is not None

    # Its own connections, as asyncpg.Pool counts them (none when it borrows the main pool's).
    def get_size(self) -> int:
        return self._own.get_size() if self._own is not None else 0

    def get_idle_size(self) -> int:
        return self._own.get_idle_size() if self._own is not None else 0

    def get_max_size(self) -> int:
        return self._own.get_max_size() if self._own is not None else 0

    async def close(self) -> None:
        if self._own is not None:
            await self._own.close()


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
