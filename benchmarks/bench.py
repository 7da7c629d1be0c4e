"""`make bench`: write throughput, and search latency through REST and MCP at growing sizes of one
tenant and across many tenants on one PostgreSQL, beside the MCP reference memory server.

Starts its own embedded PostgreSQL (or uses ENGRAM_DATABASE_URL) and `engram serve` in its own
process. Writes go through the real write path; tenants are then grown by bulk load (see
benchmarks/fill.py). Prints figures and a Markdown summary; asserts nothing.

    python -m benchmarks.bench [--scales 10000,100000,1000000] [--tenants 1000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks import load, peers, realistic, reference_server
from benchmarks.fill import grow, vector_pool
from benchmarks.stats import percentiles
from engram.domain.models import NewMemory
from engram.runtime import Engram, bootstrap_database, open_engram
from engram.settings import Settings
from engram.store.embedded import EmbeddedPostgres, _free_port, wait_for_port

Summary = list[tuple[str, str]]


async def measure_writes(engram: Engram, rng: random.Random, summary: Summary, batched: int) -> None:
    """Writes through the real write path (embedding, dedup, judge), one memory per call and in
    batches of 100, for each realistic mix (facts and chat turns, English and Chinese)."""
    for mix in realistic.MIXES:
        ctx, _ = await engram.tenants.create(f"bench-writes-{rng.randrange(10**9)}")
        per_call, in_batches = (200, batched) if mix.kind == "fact" else (50, batched // 5)
        texts = mix.texts(per_call + in_batches, rng)
        items = [NewMemory(content=t) for t in texts]
        started = time.perf_counter()
        for item in items[:per_call]:
            await engram.writes.write(ctx, item)
        single = per_call / (time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(per_call, len(items), 100):
            await engram.writes.write_batch(ctx, items[i : i + 100])
        batch = in_batches / (time.perf_counter() - started)
        for label, rate in ((f"write {mix.name}, one per call", single), (f"write {mix.name}, batches of 100", batch)):
            print(f"{label}: {rate:.0f} memories/s", flush=True)
            summary.append((label, f"{rate:.0f} memories/s"))
        await engram.tenants.drop(ctx.name)


async def search_latency(url: str, targets: list[tuple[str, str]], texts: list[str]) -> tuple[str, str]:
    """REST and MCP latency of ``texts``, each sent to a tenant of ``targets`` in turn."""
    rest: list[float] = []
    warm = texts[:20]  # connections and plans
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for i, text in enumerate([*warm, *texts]):
            tenant, key = targets[i % len(targets)]
            started = time.perf_counter()
            response = await client.post(
                f"/t/{tenant}/v1/search", json={"query": text}, headers={"Authorization": f"Bearer {key}"}
            )
            response.raise_for_status()
            if i >= len(warm):
                rest.append((time.perf_counter() - started) * 1000)
    mcp: list[float] = []
    tenant, key = targets[0]
    headers = {"Authorization": f"Bearer {key}"}
    async with Client(
        streamable_http_client(f"{url}/t/{tenant}/mcp", http_client=httpx2.AsyncClient(headers=headers))
    ) as c:
        for i, text in enumerate([*warm[:5], *texts]):
            started = time.perf_counter()
            result = await c.call_tool("search_memory", {"query": text})
            assert not result.is_error, result
            if i >= len(warm[:5]):
                mcp.append((time.perf_counter() - started) * 1000)
    return percentiles(rest), percentiles(mcp)


async def explain(engram: Engram, tenant: str) -> None:
    """The plan of the vector channel's query (as the service forces it): it must walk HNSW."""
    ctx = await engram.tenants.resolve(tenant)
    vector = await engram.embedders.get(ctx.embedding_model).embed_query("who is allergic to peanuts")
    async with engram.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        await conn.execute("SET LOCAL enable_sort = off")
        plan = await conn.fetch(
            f"EXPLAIN (ANALYZE, COSTS OFF) SELECT m.id FROM {ctx.schema}.memories m WHERE m.status = 'active' "
            "ORDER BY m.embedding <=> $1 LIMIT 20",
            vector,
        )
    steps = [re.sub(r"'\[[^']*\]'::vector", "$query", r[0].strip()) for r in plan[:4]]
    print("  vector channel plan: " + " | ".join(steps))


async def prepare(settings: Settings, dsn: str, args: argparse.Namespace, summary: Summary) -> dict:
    engram = await open_engram(settings, dsn)
    rng = random.Random(42)
    try:
        await measure_writes(engram, rng, summary, args.batched)
        scale_ctx, scale_key = await engram.tenants.create(f"bench-scale-{rng.randrange(10**9)}")
        peer = await engram.tenants.create(f"bench-peer-{rng.randrange(10**9)}") if args.peers else None
        many = []
        for i in range(args.tenants):
            ctx, key = await engram.tenants.create(f"bench-many-{i}-{rng.randrange(10**6)}")
            many.append((ctx, key))
        pool = await vector_pool(engram, scale_ctx, rng)
        started = time.perf_counter()
        for ctx, _ in many:
            await grow(engram, ctx, args.per_tenant, rng, pool)
        if many:
            print(
                f"{args.tenants} tenants of {args.per_tenant} memories ready in {time.perf_counter() - started:.0f} s"
            )
        return {
            "scale": (scale_ctx.name, scale_key),
            "peer": (peer[0].name, peer[1]) if peer else None,
            "many": [(c.name, k) for c, k in many],
            "pool": pool,
        }
    finally:
        await engram.close()


async def grow_to(settings: Settings, dsn: str, tenant: str, size: int, pool: dict, seed: int) -> float:
    engram = await open_engram(settings, dsn)
    try:
        ctx = await engram.tenants.resolve(tenant)
        seconds = await grow(engram, ctx, size, random.Random(seed), pool)
        await explain(engram, tenant)
        return seconds
    finally:
        await engram.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="10000,100000", help="sizes of one tenant, comma-separated")
    parser.add_argument("--tenants", type=int, default=1000, help="tenants on the one database (0: skip)")
    parser.add_argument("--per-tenant", type=int, default=100, help="memories in each of those tenants")
    parser.add_argument("--batched", type=int, default=3000, help="memories written in batches, per measure")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--baseline", type=int, default=10_000, help="facts for the reference server (0: skip)")
    parser.add_argument("--peers", type=int, default=10_000, help="facts for engram beside mem0 (0: skip)")
    parser.add_argument("--load-seconds", type=float, default=20, help="length of each load step (0: skip load)")
    args = parser.parse_args()
    if reason := realistic.missing():
        raise SystemExit(f"make bench needs the evaluation sets for its realistic text: {reason}")
    scales = [int(s) for s in args.scales.split(",") if s]
    external = os.environ.get("ENGRAM_DATABASE_URL")
    server, service = None, None
    if external:
        dsn = external
    else:
        root = Path(tempfile.mkdtemp(prefix="engram-bench-"))
        root.chmod(0o755)
        server = EmbeddedPostgres(root)
        server.start()
        dsn = server.dsn(via_socket=True)  # as `make run` reaches it
    summary: Summary = []
    try:
        settings = Settings(database_url=dsn)
        asyncio.run(bootstrap_database(dsn, settings.environment))
        print(
            f"engram bench: {settings.embedding_model}, {os.cpu_count()} cores, scales {scales}, {args.tenants} tenants"
        )
        ready = asyncio.run(prepare(settings, dsn, args, summary))
        port = _free_port()
        env = {**os.environ, "ENGRAM_DATABASE_URL": dsn, "ENGRAM_PORT": str(port)}
        service = subprocess.Popen(
            [sys.executable, "-m", "engram", "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port("127.0.0.1", port, timeout=120)
        url = f"http://127.0.0.1:{port}"
        rng = random.Random(7)
        asked = realistic.questions("en") + realistic.questions("zh")
        texts = [rng.choice(asked) for _ in range(args.queries)]
        for size in scales:
            seconds = asyncio.run(grow_to(settings, dsn, ready["scale"][0], size, ready["pool"], size))
            print(f"one tenant of {size:,} memories (bulk load {seconds:.0f} s)")
            rest, mcp = asyncio.run(search_latency(url, [ready["scale"]], texts))
            print(f"  search via REST: {rest}\n  search via MCP:  {mcp}")
            summary += [(f"search via REST, {size:,} memories", rest), (f"search via MCP, {size:,} memories", mcp)]
            if args.load_seconds:
                tenant, key = ready["scale"]
                for run in asyncio.run(load.curve(url, tenant, key, args.load_seconds)):
                    summary.append((f"{size:,} memories, {run.label} (20% writes)", run.summary()))
        if ready["many"]:
            rest, mcp = asyncio.run(search_latency(url, ready["many"], texts))
            label = f"{len(ready['many']):,} tenants of {args.per_tenant} memories, a random tenant per query"
            print(f"{label}\n  search via REST: {rest}\n  search via MCP (one tenant):  {mcp}")
            summary += [(f"search via REST, {label}", rest)]
        if args.baseline:
            summary += reference_server.measure(args.baseline, texts)
        if args.peers:
            summary += peers.measure(url, *ready["peer"], args.peers, texts)
    finally:
        if service is not None:
            service.terminate()
            service.wait(timeout=30)
        if server is not None:
            server.destroy()
    print("\n| measure | result |\n|---|---|")
    for label, value in summary:
        print(f"| {label} | {value} |")


if __name__ == "__main__":
    main()
