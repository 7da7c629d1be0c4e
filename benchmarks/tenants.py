"""Many tenants on one PostgreSQL: provisioning rate, database and catalog size, the memory a
backend holds after touching many schemas, search latency on random tenants (cold: first touch in
this run; warm: touched before), and the time to check every schema's migrations (what an upgrade
pays before it applies anything). Starts its own embedded PostgreSQL (or uses ENGRAM_DATABASE_URL).

    python -m benchmarks.tenants [--tenants 10000] [--memories 20] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

import asyncpg

from benchmarks import realistic
from benchmarks.stats import percentiles
from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest
from engram.domain.tenancy import schema_name
from engram.runtime import Engram, bootstrap_database, open_engram
from engram.settings import Settings
from engram.store.embedded import EmbeddedPostgres, client_program

STEP = 1000  # report every this many tenants


async def sizes(dsn: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        database = await conn.fetchval("SELECT pg_size_pretty(pg_database_size(current_database()))")
        relations = await conn.fetchval("SELECT count(*) FROM pg_catalog.pg_class")
        catalog = await conn.fetchval(
            """SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_catalog.pg_class c
               JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'pg_catalog'"""
        )
    finally:
        await conn.close()
    return f"database {database}, {relations:,} relations, catalog {catalog}"


async def autovacuum(dsn: str) -> str:
    """Whether autovacuum keeps up with many small tables: how many it has analysed so far."""
    conn = await asyncpg.connect(dsn)
    try:
        record = await conn.fetchrow(
            """SELECT count(*) AS tables, count(last_autoanalyze) AS analysed, count(last_autovacuum) AS vacuumed
               FROM pg_catalog.pg_stat_user_tables WHERE relname = 'memories'"""
        )
    finally:
        await conn.close()
    return (
        f"of {record['tables']:,} memories tables, {record['analysed']:,} analysed and {record['vacuumed']:,} vacuumed"
    )


async def backend_memory(engram: Engram) -> str:
    """What the pool's busiest backend holds in its caches (relcache, catcache, plans)."""
    async with engram.pool.acquire() as conn:
        used = await conn.fetchval("SELECT sum(used_bytes) FROM pg_catalog.pg_backend_memory_contexts")
        cache = await conn.fetchval(
            """SELECT sum(used_bytes) FROM pg_catalog.pg_backend_memory_contexts
               WHERE name IN ('CacheMemoryContext', 'CachedPlan', 'CachedPlanSource', 'index info')
                  OR path[2] = (SELECT c.path[2] FROM pg_catalog.pg_backend_memory_contexts c
                                WHERE c.name = 'CacheMemoryContext')"""
        )
    return f"{used / 2**20:.0f} MiB in use by one backend, {cache / 2**20:.0f} MiB of it caches"


async def run(dsn: str, args: argparse.Namespace) -> None:
    settings = Settings(database_url=dsn)
    engram = await open_engram(settings, dsn)
    rng = random.Random(5)
    facts = realistic.MIXES[0].texts(2000, rng) + realistic.MIXES[1].texts(500, rng)
    names: list[str] = []
    try:
        print(f"before: {await sizes(dsn)}", flush=True)
        started = time.perf_counter()
        for i in range(args.tenants):
            ctx, _ = await engram.tenants.create(f"bench-t{i}-{rng.randrange(10**6)}")
            if args.memories:
                items = [NewMemory(content=t) for t in rng.sample(facts, args.memories)]
                await engram.writes.write_batch(ctx, items)
            names.append(ctx.name)
            if (i + 1) % STEP == 0 or i + 1 == args.tenants:
                rate = (i + 1) / (time.perf_counter() - started)
                print(f"{i + 1:,} tenants: {rate:.1f} tenants/s so far; {await sizes(dsn)}", flush=True)
        questions = realistic.questions("en") + realistic.questions("zh")
        picked = rng.sample(names, min(args.queries, len(names)))
        for label in ("cold", "warm"):  # the same tenants twice: first touch, then again
            samples = []
            for name in picked:
                began = time.perf_counter()
                ctx = await engram.tenants.resolve(name)
                await engram.search.search(ctx, SearchRequest(query=rng.choice(questions)))
                samples.append((time.perf_counter() - began) * 1000)
            print(f"search on a random tenant ({label}): {percentiles(samples)}", flush=True)
        print(f"after the searches: {await backend_memory(engram)}", flush=True)
        began = time.perf_counter()
        await engram.tenants.migrate_all()
        print(f"checking every schema's migrations: {time.perf_counter() - began:.0f} s", flush=True)
        print(f"autovacuum: {await autovacuum(dsn)}", flush=True)
    finally:
        await engram.close()
    runs = {"schema only": ["--schema-only"], "whole database": []}
    if names:
        runs["one tenant"] = ["-n", schema_name(names[0])]
    for what, flags in runs.items():
        print(f"pg_dump, {what}: {dump(dsn, flags)}", flush=True)


def dump(dsn: str, flags: list[str]) -> str:
    """How long pg_dump takes, or the line it failed with (a lock per table: the whole database at
    10,000 tenants is what max_locks_per_transaction is sized for, or not)."""
    program = client_program("pg_dump")
    if program is None:
        return "skipped (no pg_dump)"
    began = time.perf_counter()
    result = subprocess.run([program, *flags, "-f", "/dev/null", dsn], capture_output=True, text=True)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        said = " | ".join(line for line in lines if "error" in line.lower() or "hint" in line.lower())
        return f"failed after {time.perf_counter() - began:.0f} s: {(said or result.stderr)[:600]}"
    return f"{time.perf_counter() - began:.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--memories", type=int, default=20, help="facts written to each tenant")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    if reason := realistic.missing():
        raise SystemExit(f"skipped: {reason}")
    server = None
    dsn = os.environ.get("ENGRAM_DATABASE_URL")
    if not dsn:
        root = Path(tempfile.mkdtemp(prefix="engram-tenants-"))
        root.chmod(0o755)
        server = EmbeddedPostgres(root)
        dsn = server.start()
    try:
        asyncio.run(bootstrap_database(dsn, Settings(database_url=dsn).environment))
        asyncio.run(run(dsn, args))
    finally:
        if server is not None:
            server.destroy()


if __name__ == "__main__":
    main()
