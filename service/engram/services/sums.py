"""The sum of a tenant's vectors per language, which centres a search's vectors (domain/centring.py),
kept in the process for a moment.

Read by every search, it was one of the round trips each search waited for, while one write moves
the mean of n memories by 1/n. A change made in this process drops the tenant's sums at once (its
write turn says so, services/turns.py): a process sees its own writes. Changes of other processes,
and imports and restores (which take the tenant's lock themselves), are seen within SECONDS."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import asyncpg
import numpy as np

from engram.store import memories as repo
from engram.store import retrieval

_RETRIEVAL = "\0retrieval"  # the key of the second vectors' sums (no model id holds a NUL)

SECONDS = 1.0
SWEEP_ABOVE = 1000  # kept entries before the expired ones are swept out

Sums = dict[str, tuple[np.ndarray, int]]


class LanguageSums:
    def __init__(self, pool: asyncpg.Pool, seconds: float = SECONDS) -> None:
        self._pool = pool
        self._seconds = seconds
        self._kept: dict[tuple[str, str], tuple[float, Sums]] = {}
        self._changes = 0  # changes seen in this process: sums read across one are not kept

    async def of(self, schema: str, model: str) -> Sums:
        """The tenant's sums for vectors of ``model`` (none while its vectors are of another)."""
        return await self._kept_or_read((schema, model), lambda conn: repo.language_sums(conn, schema, model))

    async def of_retrieval(self, schema: str) -> Sums:
        """The tenant's sums of the second vectors (the retrieval model's)."""
        return await self._kept_or_read((schema, _RETRIEVAL), lambda conn: retrieval.language_sums(conn, schema))

    async def _kept_or_read(self, key: tuple[str, str], read: Callable[[asyncpg.Connection], Awaitable[Sums]]) -> Sums:
        now = time.monotonic()
        kept = self._kept.get(key)
        if kept is not None and kept[0] > now:
            return kept[1]
        changes = self._changes
        async with self._pool.acquire() as conn:
            sums = await read(conn)
        if changes == self._changes:  # a change committed while they were read may be missing
            if len(self._kept) >= SWEEP_ABOVE:
                self._kept = {k: v for k, v in self._kept.items() if v[0] > now}
            self._kept[key] = (now + self._seconds, sums)
        return sums

    def changed(self, schema: str) -> None:
        """The tenant's memories changed in this process."""
        self._changes += 1
        for key in [key for key in self._kept if key[0] == schema]:
            del self._kept[key]
