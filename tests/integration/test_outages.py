"""Dependencies fail under load: PostgreSQL killed and brought back (its own embedded server, so
nothing else is disturbed), Redis killed and brought back. Callers get JSON 503s with Retry-After,
the log gets one warning per outage, the service recovers without a restart, and every write it
acknowledged is there afterwards."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from engram.cache import RedisCache, build_cache
from engram.runtime import bootstrap_database, engram_session
from engram.settings import Settings
from engram.store.embedded import EmbeddedPostgres, wait_for_port
from tests.conftest import ServerThread, free_port, unique_tenant
from tests.integration.test_mcp import http_transport

WRITERS = 4


@pytest.fixture
def own_postgres() -> Iterator[EmbeddedPostgres]:
    root = Path(tempfile.mkdtemp(prefix="engram-outage-pg-"))
    root.chmod(0o755)  # the unprivileged server user must reach its data directory
    server = EmbeddedPostgres(root)
    try:
        yield server
    finally:
        server.destroy()


async def until(condition, timeout: float = 120) -> None:
    """Poll an async condition; the timeout only stops a hung test."""
    async with asyncio.timeout(timeout):
        while not await condition():
            await asyncio.sleep(0.1)


async def test_postgres_killed_under_load_gives_503s_then_recovers_with_every_acknowledged_write(own_postgres, caplog):
    dsn = own_postgres.start()
    await bootstrap_database(dsn, "test")
    settings = Settings(database_url=dsn, environment="test", state_dir=own_postgres.root, pool_max_size=4)
    async with engram_session(settings, dsn) as engram:
        _, key = await engram.tenants.create("outage")
    acknowledged: list[str] = []
    refused: list[str] = []  # a refused write may still have committed just before the cut
    answers: list[httpx.Response] = []
    stop = asyncio.Event()

    with ServerThread(settings, dsn) as service:
        base, auth = f"{service.url}/t/outage/v1", {"Authorization": f"Bearer {key}"}

        async def write(worker: int) -> None:
            async with httpx.AsyncClient(base_url=base, headers=auth, timeout=30) as http:
                n = 0
                while not stop.is_set():
                    content = f"Reading log {worker}-{n}: the user finished book number {worker * 10_000 + n}"
                    answer = await http.post("/memories", json={"content": content})
                    answers.append(answer)
                    if answer.status_code in (200, 201):
                        acknowledged.append(content)
                    else:
                        refused.append(content)
                        await asyncio.sleep(0.05)
                    n += 1

        async def answered(status: int) -> bool:
            return any(a.status_code == status for a in answers[-WRITERS * 3 :])

        caplog.set_level(logging.WARNING)
        agent = Client(http_transport(f"{service.url}/t/outage/mcp", key))
        await agent.__aenter__()  # an agent connected before the outage
        writers = [asyncio.create_task(write(w)) for w in range(WRITERS)]
        try:
            await until(lambda: answered(201))
            own_postgres.stop(mode="immediate")  # as a crash: no checkpoint, connections cut
            await until(lambda: answered(503))
            async with httpx.AsyncClient(timeout=30) as http:
                search = await http.post(f"{base}/search", json={"query": "book"}, headers=auth)
            try:  # over MCP the same case is a tool error, or a 503 if the key must be checked again
                called = await agent.call_tool("search_memory", {"query": "book"})
                refused_by_mcp = called.is_error and "unavailable: the database" in called.content[0].text
            except Exception as exc:  # the transport's error for an HTTP 503
                refused_by_mcp = "503" in str(exc)
            outage_warnings = [r for r in caplog.records if "unreachable" in r.getMessage()]
            assert own_postgres.start() == dsn  # back on the same port
            await until(lambda: answered(201))
        finally:
            stop.set()
            await asyncio.gather(*writers)
            await agent.__aexit__(None, None, None)
        async with httpx.AsyncClient(base_url=base, headers=auth, timeout=30) as http:  # the clients retry
            retried = [await http.post("/memories", json={"content": content}) for content in refused]

    assert search.status_code == 503 and int(search.headers["Retry-After"]) > 0, search.text
    assert search.json()["error"]["code"] == "unavailable" and refused_by_mcp
    failures = [a for a in answers if a.status_code not in (200, 201)]
    assert failures and {a.status_code for a in failures} == {503}, {a.status_code: a.text for a in failures}
    assert all(a.headers["content-type"] == "application/json" and "Retry-After" in a.headers for a in failures)
    assert len(outage_warnings) == 1, [r.getMessage() for r in outage_warnings]
    assert not [r for r in caplog.records if r.exc_info], "no traceback for an outage"

    async with engram_session(settings, dsn) as engram:
        ctx = await engram.tenants.resolve("outage")
        async with engram.pool.acquire() as conn:
            stored = [r["content"] for r in await conn.fetch(f"SELECT content FROM {ctx.schema}.memories")]
    # Every acknowledged write is there, and a retry of a refused one stored it exactly once.
    assert {r.status_code for r in retried} <= {200, 201}
    assert sorted(stored) == sorted(acknowledged + refused) and len(set(stored)) == len(stored)


@pytest.fixture
def own_redis() -> Iterator[tuple[list[subprocess.Popen], int, Callable[[], None]]]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server installed")
    port = free_port()
    processes: list[subprocess.Popen] = []

    def start() -> None:
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        processes.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for_port("127.0.0.1", port, timeout=10)

    start()
    try:
        yield processes, port, start
    finally:
        for process in processes:
            process.kill()
            process.wait(10)


async def test_redis_killed_the_in_process_cache_stands_in_then_redis_is_used_again(own_redis, caplog):
    processes, port, start = own_redis
    cache = build_cache(f"redis://127.0.0.1:{port}/0", 60, 100)
    assert isinstance(cache, RedisCache)
    caplog.set_level(logging.INFO, logger="engram.cache.redis")
    try:
        await cache.set("q:coffee", b"1")
        assert await cache.get("q:coffee") == b"1"
        processes[-1].kill()
        processes[-1].wait(10)
        for i in range(20):  # many lookups during the outage: one warning, values kept in process
            await cache.set(f"q:{i}", b"v")
            assert await cache.get(f"q:{i}") == b"v"
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "in-process cache" in warnings[0].getMessage()
        start()

        async def back() -> bool:  # tried again once the back-off has passed
            await cache.set("q:after", b"r")
            return any("redis is back" in r.getMessage() for r in caplog.records)

        await until(back, timeout=60)
        assert await cache.get("q:after") == b"r"
    finally:
        await cache.close()


def outage_lines(caplog, since: int, level: int) -> list[str]:
    """What the service logged at ``level`` or above since record ``since`` (the test's own HTTP
    client's lines left out)."""
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records[since:] if r.levelno >= level and r.name != "httpx"]


async def test_thirty_requests_in_a_redis_outage_log_one_warning_then_one_recovery(
    own_redis, settings, bootstrapped, engram, caplog
):
    processes, port, start = own_redis
    with_redis = settings.model_copy(update={"redis_url": f"redis://127.0.0.1:{port}/0"})
    ctx, key = await engram.tenants.create(unique_tenant("redis-out"))
    caplog.set_level(logging.INFO)
    with ServerThread(with_redis, bootstrapped) as service:
        auth = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=f"{service.url}/t/{ctx.name}/v1", headers=auth, timeout=30) as http:
            assert (await http.post("/memories", json={"content": "The user likes green tea"})).status_code == 201
            assert (await http.post("/search", json={"query": "tea"})).status_code == 200
            processes[-1].kill()
            processes[-1].wait(10)
            since = len(caplog.records)
            for i in range(10):  # 30 requests: searches (their query vectors are cached), writes, lists
                assert (await http.post("/search", json={"query": f"green tea {i}"})).status_code == 200
                assert (await http.post("/memories", json={"content": f"The user read book {i}"})).status_code == 201
                assert (await http.get("/memories")).status_code == 200
            during = outage_lines(caplog, since, logging.WARNING)
            assert len(during) == 1 and during[0].startswith("engram.cache.redis: redis"), during
            start()
            since = len(caplog.records)

            async def back() -> bool:  # Redis is tried again once its back-off has passed
                await http.post("/search", json={"query": f"coffee {len(caplog.records)}"})
                return any("redis is back" in line for line in outage_lines(caplog, since, logging.INFO))

            await until(back, timeout=60)
            for i in range(5):
                assert (await http.post("/search", json={"query": f"black tea {i}"})).status_code == 200
    after = [line for line in outage_lines(caplog, since, logging.INFO) if "redis" in line]
    assert len(after) == 1 and not outage_lines(caplog, since, logging.WARNING), after


async def test_thirty_requests_in_a_database_outage_log_one_warning_then_one_recovery(own_postgres, caplog):
    """REST and MCP calls, and the memory uses waiting to be written: one outage, one warning; the
    first connection made once the database is back ends it, in one line."""
    dsn = own_postgres.start()
    await bootstrap_database(dsn, "test")
    settings = Settings(database_url=dsn, environment="test", state_dir=own_postgres.root, pool_max_size=4)
    async with engram_session(settings, dsn) as engram:
        _, key = await engram.tenants.create("outage-logs")
    caplog.set_level(logging.INFO)
    with ServerThread(settings, dsn) as service:
        base, auth = f"{service.url}/t/outage-logs/v1", {"Authorization": f"Bearer {key}"}
        agent = Client(http_transport(f"{service.url}/t/outage-logs/mcp", key))
        await agent.__aenter__()  # connected before the outage
        try:
            async with httpx.AsyncClient(base_url=base, headers=auth, timeout=30) as http:
                assert (await http.post("/memories", json={"content": "The user likes green tea"})).status_code == 201
                assert (await http.post("/search", json={"query": "tea"})).status_code == 200  # a use to write
                since = len(caplog.records)  # before: a background job may meet the outage first
                own_postgres.stop(mode="immediate")
                statuses = []
                for i in range(9):
                    statuses.append((await http.post("/search", json={"query": f"tea {i}"})).status_code)
                    statuses.append((await http.post("/memories", json={"content": f"book {i}"})).status_code)
                    statuses.append((await http.get("/memories")).status_code)
                for i in range(3):
                    called = await agent.call_tool("search_memory", {"query": f"tea {i}"})
                    assert called.is_error and "unavailable" in called.content[0].text
                await asyncio.sleep(2)  # the memory uses are tried again every half second meanwhile
                assert set(statuses) == {503}
                during = outage_lines(caplog, since, logging.WARNING)
                assert len(during) == 1 and "database unreachable" in during[0], during
                since = len(caplog.records)  # before: a background job may reconnect first
                assert own_postgres.start() == dsn

                async def answered() -> bool:
                    return (await http.post("/search", json={"query": "tea"})).status_code == 200

                await until(answered)
                for _ in range(5):
                    assert (await http.get("/memories")).status_code == 200
        finally:
            await agent.__aexit__(None, None, None)
    back = [line for line in outage_lines(caplog, since, logging.INFO) if "database" in line]
    assert len(back) == 1 and "database is back" in back[0], back
    assert not outage_lines(caplog, since, logging.WARNING)
