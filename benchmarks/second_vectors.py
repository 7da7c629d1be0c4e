"""What the second vector channel costs: acknowledged writes with it on and off, how fast its
background worker catches up, what a query's second embedding costs, and searches under an open
loop of writes while the worker runs. Starts its own embedded PostgreSQL and `engram serve` (once
with ENGRAM_RETRIEVAL_CHANNEL=false, once with it on), and writes real text through REST.

    python -m benchmarks.second_vectors [--facts 300] [--batched 2000] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import httpx

from benchmarks import realistic
from benchmarks.load import Workload, open_loop
from benchmarks.serving import own_database, serving
from benchmarks.stats import p50_p95_p99
from engram.embedding.bundled import E5Small
from engram.runtime import open_engram
from engram.settings import Settings

BATCH = 100
TURN_WORDS = 120


def turns_of(count: int, rng: random.Random) -> list[str]:
    """English chat turns cut to about 120 words (realistic.py's turns are 100-300)."""
    mix = next(m for m in realistic.MIXES if m.kind == "turn" and m.language == "en")
    return [" ".join(t.split()[:TURN_WORDS]) for t in mix.texts(count, rng)]


def facts_of(count: int, rng: random.Random) -> list[str]:
    facts = [m for m in realistic.MIXES if m.kind == "fact"]
    return [text for mix in facts for text in mix.texts(count // len(facts), rng)]


async def one_per_call(client: httpx.AsyncClient, texts: list[str]) -> float:
    started = time.perf_counter()
    for text in texts:
        (await client.post("/memories", json={"content": text})).raise_for_status()
    return len(texts) / (time.perf_counter() - started)


async def batched(client: httpx.AsyncClient, texts: list[str]) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        items = [{"content": t} for t in texts[start : start + BATCH]]
        (await client.post("/memories/batch", json={"items": items})).raise_for_status()
    return len(texts) / (time.perf_counter() - started)


async def caught_up(client: httpx.AsyncClient, since: float, timeout: float = 3600) -> tuple[float, int]:
    """Seconds from ``since`` until no memory waits for its second vector, and how many waited."""
    waited = (await client.get("/retrieval")).json()["pending"]
    while (await client.get("/retrieval")).json()["pending"]:
        if time.perf_counter() - since > timeout:
            break
        await asyncio.sleep(0.5)
    return time.perf_counter() - since, waited


async def measure(url: str, tenant: str, key: str, args: argparse.Namespace, channel: bool) -> dict[str, str]:
    rng = random.Random(5)
    out: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=f"{url}/t/{tenant}/v1", headers=headers, timeout=600) as client:
        out["writes, one per call, facts"] = f"{await one_per_call(client, facts_of(args.facts, rng)):.0f}/s"
        out["writes, batches of 100, facts"] = f"{await batched(client, facts_of(args.batched, rng)):.0f}/s"
        out["writes, batches of 100, 120-word turns"] = (
            f"{await batched(client, turns_of(args.batched // 2, rng)):.0f}/s"
        )
        if channel:
            seconds, waited = await caught_up(client, time.perf_counter())
            total = args.facts + args.batched + args.batched // 2
            out["second vectors: left after the writes"] = f"{waited} of {total}"
            out["second vectors: catching up, quiet"] = f"{waited / seconds:.0f}/s ({seconds:.0f} s)"
        if args.seconds:
            run = await open_loop(url, tenant, key, 100, args.seconds, Workload(0.2, random.Random(9)))
            p50, p95, p99 = p50_p95_p99(run.search_ms)
            out["open loop 100 req/s, 20% writes: search p50/p95/p99"] = f"{p50:.0f}/{p95:.0f}/{p99:.0f} ms"
            if channel:
                status = (await client.get("/retrieval")).json()
                out["open loop: second vectors waiting at its end"] = (
                    f"{status['pending']} (oldest {status['lag_seconds']:.0f} s)"
                )
                for rate in args.rates:
                    run = await open_loop(url, tenant, key, rate, args.seconds, Workload(0.2, random.Random(rate)))
                    p50, p95, p99 = p50_p95_p99(run.search_ms)
                    out[f"open loop {rate} req/s: search p50/p95/p99"] = f"{p50:.0f}/{p95:.0f}/{p99:.0f} ms"
    return out


def query_cost(count: int = 300) -> str:
    """The retrieval model's query embedding alone, one thread, real questions (en and zh)."""
    embedder = E5Small()
    rng = random.Random(3)
    asked = realistic.questions("en") + realistic.questions("zh")
    texts = [rng.choice(asked) for _ in range(count)]
    for text in texts[:20]:
        embedder._query(text)
    times = []
    for text in texts:
        started = time.perf_counter()
        embedder._query(text)
        times.append((time.perf_counter() - started) * 1000)
    embedder.close()
    p50, p95, p99 = p50_p95_p99(times)
    return f"{p50:.1f}/{p95:.1f}/{p99:.1f} ms"


def wait_for_the_model(url: str) -> None:
    """Its model compiles after a start: the writes are not timed against that."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not httpx.get(f"{url}/readyz").json()["second_vectors"]["model_loaded"]:
        time.sleep(0.5)


async def new_tenant(dsn: str, name: str) -> str:
    """Its key, once the last mode's dirty pages are written: a checkpoint under way slows every
    commit, so the mode measured after another would pay for it (one write per call most)."""
    engram = await open_engram(Settings(database_url=dsn), dsn)
    try:
        key = (await engram.tenants.create(name))[1]
        async with engram.pool.acquire() as conn:
            await conn.execute("CHECKPOINT")
        return key
    finally:
        await engram.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=300, help="facts written one per call")
    parser.add_argument("--batched", type=int, default=2000, help="facts written in batches (and half as many turns)")
    parser.add_argument("--seconds", type=float, default=20, help="length of each open-loop step (0: none)")
    parser.add_argument("--rates", default="150,200,250", help="open-loop rates beyond 100 req/s (the knee)")
    parser.add_argument("--rounds", type=int, default=1, help="off then on, this many times (figures of each round)")
    args = parser.parse_args()
    args.rates = [int(r) for r in args.rates.split(",") if r]
    if reason := realistic.missing():
        raise SystemExit(f"skipped: {reason}")
    results: dict[str, dict[str, str]] = {"off": {}, "on": {}}
    with own_database("engram-second-") as dsn:
        for channel in (False, True) * args.rounds:
            label = "on" if channel else "off"
            tenant = f"second-{label}-{random.randrange(10**6)}"
            key = asyncio.run(new_tenant(dsn, tenant))
            with serving(dsn, retrieval_channel=str(channel).lower()) as url:
                if channel:
                    wait_for_the_model(url)
                measured = asyncio.run(measure(url, tenant, key, args, channel))
            print(f"channel {label}: " + "; ".join(f"{k} {v}" for k, v in measured.items()), flush=True)
            for row, value in measured.items():  # one figure per round
                results[label][row] = f"{results[label][row]}, {value}" if row in results[label] else value
    results["on"]["query's second embedding, one thread, p50/p95/p99"] = query_cost()
    rows = sorted({k for r in results.values() for k in r}, key=lambda k: (k.startswith("open"), k))
    print("\n| measure | channel off | channel on |\n|---|---:|---:|")
    for row in rows:
        print(f"| {row} | {results['off'].get(row, '')} | {results['on'].get(row, '')} |")


if __name__ == "__main__":
    main()
