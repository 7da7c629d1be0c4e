"""What every cache offers: bytes in, bytes out, never an exception for an outage."""

from __future__ import annotations

from abc import ABC, abstractmethod

from engram.observability import metrics


class Cache(ABC):
    # This cache's own lookups (the process's, over every cache, are in the metrics).
    hits: int = 0
    misses: int = 0

    @abstractmethod
    async def get(self, key: str) -> bytes | None: ...

    @abstractmethod
    async def set(self, key: str, value: bytes) -> None: ...

    @abstractmethod
    async def drop_prefix(self, prefix: str) -> int | None:
        """Remove every entry whose key starts with ``prefix``; how many, or None if the cache
        could not be reached (its entries then expire by their TTL)."""

    async def close(self) -> None:  # noqa: B027 - most caches hold nothing to close
        """Release connections, if any."""

    def _count(self, value: bytes | None) -> bytes | None:
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        metrics.cache_lookup(value is not None)
        return value
