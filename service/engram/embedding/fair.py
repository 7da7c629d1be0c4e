"""Tenants take turns on the document worker: each owner has at most one chunk waiting for it,
and the worker takes chunks first come, first served, so a tenant's 500-item batch is embedded
between the others' chunks instead of ahead of them all."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator


class FairTurns:
    def __init__(self) -> None:
        # asyncio locks belong to one event loop; a process may run several in turn (the CLI, tests).
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Owner]] = (
            weakref.WeakKeyDictionary()
        )

    @contextlib.asynccontextmanager
    async def turn(self, owner: str) -> AsyncIterator[None]:
        """Hold the owner's one place in the worker's queue for the chunk under way."""
        owners = self._loops.setdefault(asyncio.get_running_loop(), {})
        held = owners.setdefault(owner, _Owner())
        held.users += 1
        try:
            async with held.lock:
                yield
        finally:
            held.users -= 1
            if not held.users:
                owners.pop(owner, None)

    def waiting(self) -> int:
        """Owners with a chunk under way or waiting, on the running loop."""
        return len(self._loops.get(asyncio.get_running_loop(), {}))


class _Owner:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0
