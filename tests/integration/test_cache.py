"""The Redis cache against a real Redis, its outage behaviour, and the in-process fallback."""

import asyncio

import pytest

from engram.cache import LocalCache, RedisCache, build_cache
from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest
from engram.services.search import SearchService
from tests.conftest import free_port

pytestmark = pytest.mark.redis


async def test_redis_round_trip_with_ttl(redis_url):
    cache = RedisCache(redis_url, ttl_seconds=1, fallback=LocalCache(10, 1))
    try:
        await cache.set("engram:test:key", b"value")
        assert await cache.get("engram:test:key") == b"value"
        await asyncio.sleep(1.2)
        assert await cache.get("engram:test:key") is None
    finally:
        await cache.close()


async def test_search_works_through_redis_and_through_an_outage(engram, tenant, redis_url):
    ctx, _ = tenant
    await engram.writes.write(ctx, NewMemory(content="The user's dog is called Biscuit"))
    shared = build_cache(redis_url, 60, 10)
    dead = build_cache(f"redis://127.0.0.1:{free_port()}/0", 60, 10)
    assert isinstance(shared, RedisCache) and isinstance(dead, RedisCache)
    try:
        for cache in (shared, dead):
            retrieval, layers = engram.settings.retrieval, engram.settings.lifecycle.layer_weights
            service = SearchService(
                engram.pool, engram.nearest, engram.sums, engram.embedders, cache, retrieval, layers, engram.access
            )
            for _ in range(2):
                result = await service.search(ctx, SearchRequest(query="what is the dog's name"))
                assert result.hits[0].memory.content == "The user's dog is called Biscuit"
        assert shared.hits >= 1
        assert dead.hits >= 1 and not dead.available  # the in-process cache stood in
    finally:
        await shared.close()
        await dead.close()


def test_without_redis_url_the_cache_is_in_process():
    assert isinstance(build_cache(None, 60, 10), LocalCache)


async def test_local_cache_evicts_least_recently_used_and_expires():
    cache = LocalCache(max_items=2, ttl_seconds=60)
    await cache.set("a", b"1")
    await cache.set("b", b"2")
    assert await cache.get("a") == b"1"
    await cache.set("c", b"3")
    assert await cache.get("b") is None and await cache.get("a") == b"1"
    expiring = LocalCache(max_items=2, ttl_seconds=0)
    await expiring.set("x", b"1")
    assert await expiring.get("x") is None


async def test_a_prefix_is_dropped_from_redis_and_from_the_stand_in(redis_url):
    """Erasure drops a user's cached query vectors by prefix; an unreachable Redis says so (None)."""
    fallback = LocalCache(100, 60)
    cache = RedisCache(redis_url, ttl_seconds=60, fallback=fallback)
    dead = RedisCache(f"redis://127.0.0.1:{free_port()}/0", ttl_seconds=60, fallback=LocalCache(10, 60))
    try:
        for n in range(1200):  # more than one SCAN batch
            await cache.set(f"engram:test-drop:alice:{n}", b"v")
        await cache.set("engram:test-drop:bob:0", b"v")
        fallback.keep("engram:test-drop:alice:local", b"v")
        assert await cache.drop_prefix("engram:test-drop:alice:") == 1201
        assert await cache.get("engram:test-drop:alice:7") is None
        assert fallback.lookup("engram:test-drop:alice:local") is None
        assert await cache.get("engram:test-drop:bob:0") == b"v"
        assert await cache.drop_prefix("engram:test-drop:alice:") == 0
        assert await dead.drop_prefix("engram:test-drop:") is None
    finally:
        await cache.drop_prefix("engram:test-drop:")
        await cache.close()
        await dead.close()
