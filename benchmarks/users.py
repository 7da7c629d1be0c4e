"""Many users in one tenant: search latency through REST for a tenant of 1,000 users x 100
memories (each search acting for one user), for one user of 100,000 memories, and for a tenant
of 100,000 memories with no users (as before users existed, at the same total size); then the
time to erase a user holding 10,000 memories (with their history) from a tenant of 30,000.
Starts its own embedded PostgreSQL and `engram serve`.

    python -m benchmarks.users [--users 1000] [--per-user 100] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import httpx

from benchmarks import realistic
from benchmarks.fill import grow, vector_pool
from benchmarks.serving import own_database, serving
from benchmarks.stats import percentiles
from engram.runtime import open_engram
from engram.settings import Settings

ERASED = "leaving-user"


async def prepare(settings: Settings, dsn: str, args: argparse.Namespace) -> dict[str, tuple[str, str]]:
    engram = await open_engram(settings, dsn)
    rng = random.Random(42)
    try:
        made = {}
        for label in ("many", "solo", "none", "erase"):
            ctx, key = await engram.tenants.create(f"users-{label}-{rng.randrange(10**6)}")
            made[label] = (ctx, key)
        pool = await vector_pool(engram, made["none"][0], rng)
        total = args.users * args.per_user
        plans = {
            "many": (total, lambda i: f"user-{i % args.users:05d}", False),
            "solo": (total, lambda _: "solo", False),
            "none": (total, lambda _: None, False),
            "erase": (3 * args.erase, lambda i: ERASED if i % 3 == 0 else f"other-{i % 97}", True),
        }
        for label, (size, owner, history) in plans.items():
            seconds = await grow(engram, made[label][0], size, rng, pool, owner, history)
            print(f"{label}: {size:,} memories loaded in {seconds:.0f} s")
        async with engram.pool.acquire() as conn:  # the loads' dirty pages written before any timing
            await conn.execute("CHECKPOINT")
        return {label: (ctx.name, key) for label, (ctx, key) in made.items()}
    finally:
        await engram.close()


async def latency(url: str, tenant: str, key: str, texts: list[str], user_of) -> str:
    samples: list[float] = []
    rng = random.Random(9)
    warm = texts[:20]
    async with httpx.AsyncClient(base_url=f"{url}/t/{tenant}/v1", headers={"Authorization": f"Bearer {key}"}) as c:
        for i, text in enumerate([*warm, *texts]):
            user = user_of(rng)
            body = {"query": text, "filter": {"user_id": user}} if user else {"query": text}
            started = time.perf_counter()
            response = await c.post("/search", json=body, timeout=60)
            response.raise_for_status()
            if i >= len(warm):
                samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


async def erase(url: str, tenant: str, key: str) -> None:
    async with httpx.AsyncClient(base_url=f"{url}/t/{tenant}/v1", headers={"Authorization": f"Bearer {key}"}) as c:
        started = time.perf_counter()
        response = await c.delete(f"/users/{ERASED}", timeout=600)
        seconds = time.perf_counter() - started
        response.raise_for_status()
        receipt = response.json()
        again = time.perf_counter()
        (await c.delete(f"/users/{ERASED}", timeout=600)).raise_for_status()
        rerun = time.perf_counter() - again
    removed = ", ".join(f"{table} {n:,}" for table, n in receipt["removed"].items())
    print(
        f"erasing a user of {receipt['removed']['memories']:,} memories: {seconds:.2f} s ({removed}); "
        f"complete {receipt['complete']}; again (nothing left): {rerun:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--erase", type=int, default=10_000, help="memories of the user erased")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    if reason := realistic.missing():
        raise SystemExit(f"the users bench needs the evaluation sets for its questions: {reason}")
    with own_database("engram-users-") as dsn:
        tenants = asyncio.run(prepare(Settings(database_url=dsn), dsn, args))
        rng = random.Random(7)
        asked = realistic.questions("en")
        # distinct questions: every search embeds its query (a cached vector is kept per user, so
        # repeats would favour the tenants without users)
        texts = rng.sample(asked, min(args.queries, len(asked)))
        total = args.users * args.per_user
        cases = [
            (
                f"{args.users:,} users x {args.per_user} memories, acting for one",
                "many",
                lambda r: f"user-{r.randrange(args.users):05d}",
            ),
            (f"one user of {total:,} memories, acting for them", "solo", lambda _: "solo"),
            (f"{total:,} memories of no user (as before users)", "none", lambda _: None),
        ]
        with serving(dsn) as url:
            for label, tenant, user_of in cases:
                print(f"search, {label}: {asyncio.run(latency(url, *tenants[tenant], texts, user_of))}")
            asyncio.run(erase(url, *tenants["erase"]))


if __name__ == "__main__":
    main()
