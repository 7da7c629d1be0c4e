"""The tenant's write lock, taken in turn: the writers of one tenant in this process queue here,
holding nothing, and only the one whose turn it is takes a pooled connection and the database's
lock (store/memories.lock_writes, which still orders writers across processes).

Queued on the database's lock instead, every waiting writer held a connection: at 20 writes/s
into one tenant, six of the pool's ten waited there at once and searches waited for the rest."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import asyncpg

from engram.store import memories as repo


class KeyedLocks:
    """One asyncio lock per key (a tenant's schema), kept only while someone waits for it or holds
    it: a process that has written to ten thousand tenants keeps none of their locks."""

    def __init__(self) -> None:
        self._queues: dict[str, _Queue] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        queue = self._queues.setdefault(key, _Queue(asyncio.Lock()))
        queue.members += 1
        try:
            async with queue.lock:
                yield
        finally:
            queue.members -= 1
            if not queue.members:
                del self._queues[key]

    def __len__(self) -> int:
        return len(self._queues)


@dataclass
class _Queue:
    lock: asyncio.Lock
    members: int = 0  # waiting or holding


class WriteTurns:
    def __init__(self, pool: asyncpg.Pool, changed: Callable[[str], None] = lambda schema: None) -> None:
        self._pool = pool
        self._changed = changed  # told of each turn's end, whether it committed or not
        self._writers = KeyedLocks()

    @contextlib.asynccontextmanager
    async def turn(self, schema: str) -> AsyncIterator[tuple[asyncpg.Connection, int]]:
        """A connection in a transaction that holds the tenant's write lock, and the tenant's
        generation before it (see repo.lock_writes)."""
        async with self._writers.hold(schema):
            try:
                async with self._pool.acquire() as conn, conn.transaction():
                    yield conn, await repo.lock_writes(conn, schema)
            finally:
                self._changed(schema)
