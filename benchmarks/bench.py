"""`make bench`: write throughput and search latency of a real engram service at 10k memories.

Starts its own embedded PostgreSQL (or uses ENGRAM_DATABASE_URL), fills one tenant through the
service layer, then measures search latency through REST and MCP (streamable HTTP) against
`engram serve` running in its own process. Prints figures; asserts nothing.

    python benchmarks/bench.py [--memories 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.domain.models import MemoryType, NewMemory
from engram.runtime import bootstrap_database, open_engram
from engram.settings import Settings
from engram.store.embedded import EmbeddedPostgres, _free_port, wait_for_port

PEOPLE = ["the user", "Alice", "Bob", "my sister", "the manager", "用户", "小王", "妈妈"]
EN_FACTS = [
    "{p} ordered item {n} from the online shop",
    "{p} prefers green tea over coffee on day {n}",
    "{p} has a meeting about project {n} next Tuesday",
    "{p} booked flight CA{n} to Shanghai",
    "{p} is allergic to peanuts since {n}",
    "{p} moved to apartment {n} on Elm Street",
    "{p} wants a reminder to pay invoice {n}",
    "{p} finished reading chapter {n} of the novel",
]
ZH_FACTS = [
    "{p}的订单{n}已经发货",
    "{p}喜欢在第{n}天喝美式咖啡",
    "{p}预订了第{n}号会议室",
    "{p}的快递单号是SF{n}",
    "{p}在{n}年开始学习钢琴",
]
QUERIES = [
    "what did the user order",
    "where is order {n}",
    "flight CA{n}",
    "用户喜欢喝什么",
    "快递单号SF{n}",
    "who is allergic to peanuts",
    "meeting about project {n}",
    "小王的订单",
    "invoice {n} reminder",
    "what is my sister reading",
]


def synthetic_memories(count: int, rng: random.Random) -> list[NewMemory]:
    items, seen = [], set()
    while len(items) < count:
        template = rng.choice(EN_FACTS + ZH_FACTS)
        content = template.format(p=rng.choice(PEOPLE), n=rng.randint(100, 999_999))
        if content not in seen:
            seen.add(content)
            items.append(NewMemory(content=content, type=rng.choice(list(MemoryType))))
    return items


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return (
        f"p50 {statistics.median(ordered):6.1f} ms   p95 {pick(0.95):6.1f} ms   "
        f"p99 {pick(0.99):6.1f} ms   (n={len(ordered)})"
    )


async def fill(settings: Settings, dsn: str, count: int, rng: random.Random) -> str:
    engram = await open_engram(settings, dsn)
    try:
        ctx, key = await engram.tenants.create(f"bench-{rng.randint(0, 10**9)}")
        items = synthetic_memories(count + 200, rng)
        single, batched = items[:200], items[200:]
        started = time.perf_counter()
        for item in single:
            await engram.writes.write(ctx, item)
        single_rate = len(single) / (time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(0, len(batched), 100):
            await engram.writes.write_batch(ctx, batched[i : i + 100])
        batch_rate = len(batched) / (time.perf_counter() - started)
        print(f"write, one per call:      {single_rate:7.1f} memories/s  ({len(single)} memories)")
        print(f"write, batches of 100:    {batch_rate:7.1f} memories/s  ({len(batched)} memories)")
        async with engram.pool.acquire() as conn:
            await conn.execute(f"ANALYZE {ctx.schema}.memories")
        return f"{ctx.name}\n{key}"
    finally:
        await engram.close()


async def measure(url: str, tenant: str, key: str, queries: list[str]) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        for q in queries[:20]:  # warm-up: connections, plans
            await client.post(f"/t/{tenant}/v1/search", json={"query": q})
        for label, batch in (("cold queries", queries), ("repeated queries", queries[:50] * 4)):
            samples = []
            for q in batch:
                started = time.perf_counter()
                response = await client.post(f"/t/{tenant}/v1/search", json={"query": q})
                samples.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            print(f"search via REST, {label + ':':18}{percentiles(samples)}")
    transport = streamable_http_client(f"{url}/t/{tenant}/mcp", http_client=httpx2.AsyncClient(headers=headers))
    async with Client(transport) as mcp:
        samples = []
        for q in queries:
            started = time.perf_counter()
            result = await mcp.call_tool("search_memory", {"query": q})
            samples.append((time.perf_counter() - started) * 1000)
            assert not result.is_error
        print(f"search via MCP, cold queries:     {percentiles(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(42)
    external = os.environ.get("ENGRAM_DATABASE_URL")
    server = None
    if external:
        dsn = external
    else:
        root = Path(tempfile.mkdtemp(prefix="engram-bench-"))
        root.chmod(0o755)
        server = EmbeddedPostgres(root)
        dsn = server.start()
    service = None
    try:
        settings = Settings(database_url=dsn)
        asyncio.run(bootstrap_database(dsn, settings.environment))
        print(f"engram bench: {args.memories} memories, {settings.embedding_model}, {os.cpu_count()} cores")
        tenant, key = asyncio.run(fill(settings, dsn, args.memories, rng)).split("\n")
        port = _free_port()
        env = {**os.environ, "ENGRAM_DATABASE_URL": dsn, "ENGRAM_PORT": str(port)}
        service = subprocess.Popen(
            [sys.executable, "-m", "engram", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port("127.0.0.1", port, timeout=120)
        queries = [rng.choice(QUERIES).format(n=rng.randint(100, 999_999)) for _ in range(args.queries)]
        asyncio.run(measure(f"http://127.0.0.1:{port}", tenant, key, queries))
    finally:
        if service is not None:
            service.terminate()
            service.wait(timeout=30)
        if server is not None:
            server.destroy()


if __name__ == "__main__":
    main()
