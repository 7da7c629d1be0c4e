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


@dataclass
class _Queue:
    lock: asyncio.Lock
    members: int = 0  # writers waiting or writing; the queue is dropped when none is left


class WriteTurns:
    def __init__(self, pool: asyncpg.Pool, changed: Callable[[str], None] = lambda schema: None) -> None:
        self._pool = pool
        self._changed = changed  # told of each turn's end, whether it committed or not
        self._queues: dict[str, _Queue] = {}

    @contextlib.asynccontextmanager
    async def turn(self, schema: str) -> AsyncIterator[tuple[asyncpg.Connection, int]]:
        """A connection in a transaction that holds the tenant's write lock, and the tenant's
        generation before it (see repo.lock_writes)."""
        queue = self._queues.setdefault(schema, _Queue(asyncio.Lock()))
        queue.members += 1
        try:
            async with queue.lock:
                try:
                    async with self._pool.acquire() as conn, conn.transaction():
                        yield conn, await repo.lock_writes(conn, schema)
                finally:
                    self._changed(schema)
        finally:
            queue.members -= 1
            if not queue.members:
                del self._queues[schema]
