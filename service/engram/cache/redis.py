"""Redis cache shared by replicas. During an outage the in-process cache stands in (the values are
query vectors: they never go stale), with one warning when it starts and a note when it ends."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

from redis.asyncio import Redis
from redis.exceptions import RedisError

from engram.cache.base import Cache
from engram.cache.local import LocalCache
from engram.observability.outages import Outage

log = logging.getLogger(__name__)

# After a failure, skip Redis for this long instead of paying a timeout on every request.
_BACKOFF_SECONDS = 5.0


class RedisCache(Cache):
    def __init__(self, url: str, ttl_seconds: int, fallback: LocalCache) -> None:
        self._redis = Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)
        self._ttl = ttl_seconds
        self._fallback = fallback
        self._down_until = 0.0
        self._outage = Outage(log, "redis", "the in-process cache stands in until it is back")

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def get(self, key: str) -> bytes | None:
        if self.available:
            try:
                value = await self._redis.get(key)
            except (RedisError, OSError) as exc:
                self._mark_down(exc)
            else:
                self._mark_up()
                return self._count(value if isinstance(value, bytes) else None)
        return self._count(self._fallback.lookup(key))

    async def set(self, key: str, value: bytes) -> None:
        if self.available:
            try:
                await self._redis.set(key, value, ex=self._ttl)
            except (RedisError, OSError) as exc:
                self._mark_down(exc)
            else:
                self._mark_up()
                return
        self._fallback.keep(key, value)

    async def drop_prefix(self, prefix: str) -> int | None:
        """From Redis and from the in-process stand-in; None when Redis is out of reach."""
        dropped = await self._fallback.drop_prefix(prefix) or 0
        try:
            async for batch in _batches(self._redis.scan_iter(match=f"{prefix}*", count=1000)):
                dropped += await self._redis.unlink(*batch)
        except (RedisError, OSError) as exc:
            self._mark_down(exc)
            return None
        self._mark_up()
        return dropped

    async def close(self) -> None:
        try:
            await self._redis.aclose()
        except (RedisError, OSError):
            log.debug("redis close failed", exc_info=True)

    def _mark_down(self, exc: Exception) -> None:
        self._outage.began(exc)
        self._down_until = time.monotonic() + _BACKOFF_SECONDS

    def _mark_up(self) -> None:
        self._outage.ended()


async def _batches(keys: AsyncIterator[bytes], size: int = 500) -> AsyncIterator[list[bytes]]:
    batch: list[bytes] = []
    async for key in keys:
        batch.append(key)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
