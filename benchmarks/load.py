"""Many clients at once against the running service, over REST: searches with real questions and
writes of real facts (benchmarks/realistic.py), English and Chinese.

- closed loop: N clients, each sending its next request when the last one answered (capacity);
- open loop: requests arrive at a fixed mean rate (Poisson) whether or not earlier ones have
  answered, over at most 32 connections; a request's latency counts from when it was due, so a
  saturated service shows its queue instead of hiding it (no coordinated omission).

    python -m benchmarks.load --url http://127.0.0.1:8080 --tenant T --key K
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import dataclass, field

import httpx

from benchmarks import realistic
from benchmarks.stats import quantile

CONNECTIONS = 32


@dataclass
class Run:
    label: str
    seconds: float = 0.0
    search_ms: list[float] = field(default_factory=list)
    write_ms: list[float] = field(default_factory=list)
    errors: int = 0

    def summary(self) -> str:
        done = len(self.search_ms) + len(self.write_ms)
        s, w = self.search_ms, self.write_ms
        return (
            f"{done / self.seconds:.0f} req/s ({len(s) / self.seconds:.0f} searches/s); "
            f"search p50/p95/p99 {quantile(s, 0.5):.0f}/{quantile(s, 0.95):.0f}/{quantile(s, 0.99):.0f} ms; "
            f"write p50/p95 {quantile(w, 0.5):.0f}/{quantile(w, 0.95):.0f} ms"
        ) + (f"; {self.errors} errors" if self.errors else "")


class Workload:
    """What the clients send: searches of real questions, writes of real facts, in both languages."""

    def __init__(self, write_share: float, rng: random.Random) -> None:
        self.write_share = write_share
        self.rng = rng
        self.questions = realistic.questions("en") + realistic.questions("zh")
        facts = [mix for mix in realistic.MIXES if mix.kind == "fact"]
        self.facts = [text for mix in facts for text in mix.texts(3000, rng)]

    def next(self) -> tuple[str, dict]:
        if self.rng.random() < self.write_share:
            return "write", {"content": self.facts.pop() if self.facts else f"fact {self.rng.random()}"}
        return "search", {"query": self.rng.choice(self.questions)}


async def _send(client: httpx.AsyncClient, base: str, kind: str, body: dict, due: float, run: Run) -> None:
    path = "/search" if kind == "search" else "/memories"
    try:
        response = await client.post(f"{base}{path}", json=body)
        ok = response.status_code < 300
    except httpx.HTTPError:
        ok = False
    elapsed = (time.perf_counter() - due) * 1000
    if not ok:
        run.errors += 1
    elif kind == "search":
        run.search_ms.append(elapsed)
    else:
        run.write_ms.append(elapsed)


def _client(url: str, key: str) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    return httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}"}, limits=limits, timeout=120)


async def closed_loop(url: str, tenant: str, key: str, clients: int, seconds: float, work: Workload) -> Run:
    run = Run(f"closed loop, {clients} clients")
    base = f"/t/{tenant}/v1"
    async with _client(url, key) as client:
        end = time.perf_counter() + seconds

        async def one_client() -> None:
            while time.perf_counter() < end:
                kind, body = work.next()
                await _send(client, base, kind, body, time.perf_counter(), run)

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        run.seconds = time.perf_counter() - started
    return run


async def open_loop(url: str, tenant: str, key: str, rate: float, seconds: float, work: Workload) -> Run:
    run = Run(f"open loop, {rate:g} requests/s")
    base = f"/t/{tenant}/v1"
    async with _client(url, key) as client:
        started = time.perf_counter()
        due, pending = started, []
        while due < started + seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            kind, body = work.next()
            pending.append(asyncio.create_task(_send(client, base, kind, body, due, run)))
            due += work.rng.expovariate(rate)
        await asyncio.gather(*pending)
        run.seconds = max(seconds, time.perf_counter() - started)
    return run


async def curve(
    url: str, tenant: str, key: str, seconds: float, write_share: float = 0.2, rates=(25, 50, 100, 200)
) -> list[Run]:
    """Closed loop at 1, 4, 16 and 32 clients, then open loop at each rate."""
    work = Workload(write_share, random.Random(11))
    runs = []
    for clients in (1, 4, 16, 32):
        runs.append(await closed_loop(url, tenant, key, clients, seconds, work))
        print(f"  {runs[-1].label}: {runs[-1].summary()}", flush=True)
    for rate in rates:
        runs.append(await open_loop(url, tenant, key, rate, seconds, work))
        print(f"  {runs[-1].label}: {runs[-1].summary()}", flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--writes", type=float, default=0.2, help="share of requests that write")
    args = parser.parse_args()
    if reason := realistic.missing():
        raise SystemExit(f"skipped: {reason}")
    asyncio.run(curve(args.url, args.tenant, args.key, args.seconds, args.writes))


if __name__ == "__main__":
    main()
