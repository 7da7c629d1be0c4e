"""Uses of memories (a search returned them), counted in memory and written for each tenant in one
statement every FLUSH_SECONDS, instead of a row-locking update inside every search: a search never
waits for another's locks or for a write. Whatever reads a tenant's memories in this process
flushes its counts first, so it sees every use counted here; other processes see them within the
interval. Counts are advisory (they weigh against forgetting): a crash loses at most one interval."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import asyncpg

from engram.observability.outages import Outage
from engram.store import memories as repo
from engram.store.db import unreachable

log = logging.getLogger(__name__)
FLUSH_SECONDS = 0.5


@dataclass
class Uses:
    count: int
    last: datetime  # when the latest of them happened (not when they are written)


class AccessLog:
    def __init__(self, pool: asyncpg.Pool, database: Outage | None = None, interval: float = FLUSH_SECONDS) -> None:
        """``database``: the outage the service's requests share (so that one is logged once)."""
        self._pool = pool
        self._database = database or Outage(log, "database", "memory uses wait in this process until it is back")
        self._interval = interval
        self._pending: dict[str, dict[UUID, Uses]] = {}
        # One write of a tenant's uses at a time: a reader's flush waits for one under way (the
        # interval's), which has taken the counts it would otherwise find gone and not wait for.
        self._writing: dict[str, asyncio.Lock] = {}
        self._task: asyncio.Task[None] | None = None

    def count(self, schema: str, ids: list[UUID], at: datetime | None = None) -> dict[UUID, int]:
        """Count one use of each memory, now; returns each one's uses not yet written."""
        at = at or datetime.now(UTC)
        pending = self._pending.setdefault(schema, {})
        for memory_id in ids:
            uses = pending.setdefault(memory_id, Uses(0, at))
            uses.count, uses.last = uses.count + 1, max(uses.last, at)
        return {memory_id: pending[memory_id].count for memory_id in ids}

    def _put_back(self, schema: str, uses: dict[UUID, Uses]) -> None:
        pending = self._pending.setdefault(schema, {})
        for memory_id, u in uses.items():
            if memory_id in pending:
                pending[memory_id] = Uses(pending[memory_id].count + u.count, max(pending[memory_id].last, u.last))
            else:
                pending[memory_id] = u

    async def flush(self, schema: str | None = None) -> None:
        """Write the counted uses of ``schema`` (default: of every tenant)."""
        for name in [schema] if schema else list(self._pending):
            async with self._writing.setdefault(name, asyncio.Lock()):
                await self._write(name)

    async def _write(self, name: str) -> None:
        uses = self._pending.pop(name, None)
        if not uses:
            return
        try:
            async with self._pool.acquire() as conn:
                await repo.add_uses(conn, name, {memory_id: (u.count, u.last) for memory_id, u in uses.items()})
        except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError):
            # The tenant was dropped (here, or by another process): its uses went with it.
            log.debug("uses of %d memories dropped: tenant schema %s is gone", len(uses), name)
        except Exception as exc:
            if not unreachable(exc):
                raise
            self._put_back(name, uses)  # for the next flush: said once per outage, not per flush
            self._database.began(exc)
            log.debug("uses of %d memories not written yet: the database is out of reach", len(uses))

    def start(self) -> None:
        self._task = asyncio.create_task(self._flush_every_interval(), name="engram-access-log")

    async def _flush_every_interval(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.flush()
            except Exception:  # a bug must not end the loop: the counts of the next interval still matter
                log.exception("writing memory uses failed")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            await self.flush()
        except Exception:
            log.exception("the last uses of memories could not be written")
