"""Cache port: Redis when configured (the in-process LRU standing in during an outage), the
in-process LRU otherwise."""

from engram.cache.base import Cache
from engram.cache.local import LocalCache
from engram.cache.redis import RedisCache

__all__ = ["Cache", "LocalCache", "RedisCache", "build_cache"]


def build_cache(redis_url: str | None, ttl_seconds: int, max_items: int) -> Cache:
    local = LocalCache(max_items, ttl_seconds)
    return RedisCache(redis_url, ttl_seconds, fallback=local) if redis_url else local
