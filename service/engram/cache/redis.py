"""Redis cache shared by replicas. An outage degrades to no cache, never to an error."""

from __future__ import annotations

import logging
import time

from redis.asyncio import Redis
from redis.exceptions import RedisError

from engram.cache.base import Cache

log = logging.getLogger(__name__)

# After a failure, skip Redis for this long instead of paying a timeout on every request.
_BACKOFF_SECONDS = 5.0


class RedisCache(Cache):
    def __init__(self, url: str, ttl_seconds: int) -> None:
        self._redis = Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)
        self._ttl = ttl_seconds
        self._down_until = 0.0

    @property
    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    async def get(self, key: str) -> bytes | None:
        if not self.available:
            return self._count(None)
        try:
            return self._count(await self._redis.get(key))
        except (RedisError, OSError) as exc:
            self._mark_down(exc)
            return self._count(None)

    async def set(self, key: str, value: bytes) -> None:
        if not self.available:
            return
        try:
            await self._redis.set(key, value, ex=self._ttl)
        except (RedisError, OSError) as exc:
            self._mark_down(exc)

    async def close(self) -> None:
        try:
            await self._redis.aclose()
        except (RedisError, OSError):
            log.debug("redis close failed", exc_info=True)

    def _mark_down(self, exc: Exception) -> None:
        log.warning("redis unavailable, caching disabled for %.0fs: %s", _BACKOFF_SECONDS, exc)
        self._down_until = time.monotonic() + _BACKOFF_SECONDS
