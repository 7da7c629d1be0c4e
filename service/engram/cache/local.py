"""In-process LRU with a TTL: the default when no Redis is configured."""

from __future__ import annotations

import time
from collections import OrderedDict

from engram.cache.base import Cache


class LocalCache(Cache):
    def __init__(self, max_items: int, ttl_seconds: int) -> None:
        self._items: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._max = max_items
        self._ttl = ttl_seconds

    async def get(self, key: str) -> bytes | None:
        return self._count(self.lookup(key))

    async def set(self, key: str, value: bytes) -> None:
        self.keep(key, value)

    async def drop_prefix(self, prefix: str) -> int | None:
        doomed = [key for key in self._items if key.startswith(prefix)]
        for key in doomed:
            del self._items[key]
        return len(doomed)

    def lookup(self, key: str) -> bytes | None:
        """The value, uncounted (for a cache that stands in for another)."""
        item = self._items.get(key)
        if item is None or item[0] < time.monotonic():
            self._items.pop(key, None)
            return None
        self._items.move_to_end(key)
        return item[1]

    def keep(self, key: str, value: bytes) -> None:
        if self._max == 0:
            return
        self._items[key] = (time.monotonic() + self._ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self._max:
            self._items.popitem(last=False)
