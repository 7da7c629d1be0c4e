"""One tenant (or one nameless client) abusing the service while another tenant searches: the
victim's search latency under each abuse against its quiet baseline. The bar is a p95 under 3x
the baseline's. Starts its own embedded PostgreSQL and `engram serve` (the real server config).

    python -m benchmarks.abuse [--seconds 15] [--memories 500]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import time
from collections.abc import Awaitable, Callable

import httpx

from benchmarks import realistic
from benchmarks.serving import own_database, serving
from benchmarks.stats import p50_p95_p99
from engram.domain.models import NewMemory
from engram.runtime import open_engram
from engram.settings import Settings

BAR = 3.0
Abuse = Callable[[str, str, str, asyncio.Event], Awaitable[int]]  # url, tenant, key, stop -> requests sent


async def victim(url: str, tenant: str, key: str, questions: list[str], stop: asyncio.Event) -> list[float]:
    """Searches one after another, as an agent does, until told to stop; latencies in ms."""
    latencies, rng = [], random.Random(3)
    async with _client(url, tenant, key) as client:
        while not stop.is_set():
            started = time.perf_counter()
            response = await client.post("/search", json={"query": rng.choice(questions), "top_k": 5})
            response.raise_for_status()
            latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def _client(url: str, tenant: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"{url}/t/{tenant}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=120)


def _dated_text(size: int) -> str:
    """Text full of dates, as the write path reads them."""
    line = "On 3 March 2025 I met Anna in Lyon, and last Tuesday we spoke again about 12/04/2024. "
    return (line * (size // len(line) + 1))[:size]


async def _posting(url: str, tenant: str, key: str, stop: asyncio.Event, clients: int, path: str, body: dict) -> int:
    """The same body again and again, encoded once: the abuser's own CPU is not the service's."""
    sent, encoded = 0, json.dumps(body).encode()
    headers = {"content-type": "application/json"}

    async def one() -> None:
        nonlocal sent
        async with _client(url, tenant, key) as client:
            while not stop.is_set():
                await client.post(path, content=encoded, headers=headers)
                sent += 1

    await asyncio.gather(*(one() for _ in range(clients)))
    return sent


async def big_content(url: str, tenant: str, key: str, stop: asyncio.Event) -> int:
    return await _posting(url, tenant, key, stop, 4, "/memories", {"content": _dated_text(1_000_000)})


async def big_metadata(url: str, tenant: str, key: str, stop: asyncio.Event) -> int:
    metadata = {f"k{i}": "v" * 100 for i in range(10_000)}  # ~1 MB
    return await _posting(url, tenant, key, stop, 4, "/memories", {"content": "A note", "metadata": metadata})


async def huge_batch(url: str, tenant: str, key: str, stop: asyncio.Event) -> int:
    items = [{"content": f"The user's parcel number {i} is late"} for i in range(10_000)]
    return await _posting(url, tenant, key, stop, 2, "/memories/batch", {"items": items})


async def batch_writes(url: str, tenant: str, key: str, stop: asyncio.Event) -> int:
    rng = random.Random(11)
    texts = realistic.MIXES[0].texts(20_000, rng) + realistic.MIXES[2].texts(2_000, rng)
    sent = 0

    async def one(seed: int) -> None:
        nonlocal sent
        local = random.Random(seed)
        async with _client(url, tenant, key) as client:
            while not stop.is_set():
                items = [{"content": local.choice(texts) + f" ({local.randrange(10**9)})"} for _ in range(500)]
                body = json.dumps({"items": items}).encode()
                await client.post("/memories/batch", content=body, headers={"content-type": "application/json"})
                sent += 1

    await asyncio.gather(one(1), one(2))
    return sent


async def big_header(url: str, tenant: str, key: str, stop: asyncio.Event) -> int:
    """A 50 MB header, no key, again and again."""
    port = int(url.rsplit(":", 1)[1])
    sent = 0
    while not stop.is_set():
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /t/x/v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        with contextlib.suppress(ConnectionError):
            for _ in range(50 * 16):
                writer.write(b"a" * 65536)
                await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
        sent += 1
    return sent


async def slow_clients(url: str, tenant: str, key: str, stop: asyncio.Event) -> int:
    """100 clients that open a request and never finish it (a byte now and then)."""
    port = int(url.rsplit(":", 1)[1])
    opened = 0

    async def one() -> None:
        nonlocal opened
        while not stop.is_set():
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            opened += 1
            with contextlib.suppress(ConnectionError):
                for byte in b"POST /t/x/v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"s" * 10_000:
                    if stop.is_set() or reader.at_eof():
                        break
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(1)
            writer.close()

    await asyncio.gather(*(one() for _ in range(100)))
    return opened


ABUSES: list[tuple[str, Abuse]] = [
    ("4 clients sending 1 MB content full of dates", big_content),
    ("4 clients sending 1 MB metadata", big_metadata),
    ("2 clients sending 10,000-item batches", huge_batch),
    ("2 clients writing 500-item batches of real text", batch_writes),
    ("a 50 MB header without a key, again and again", big_header),
    ("100 clients that never finish a request", slow_clients),
]


async def measure(
    url: str, victim_of: tuple[str, str], abuser: tuple[str, str], seconds: float, questions: list[str], only: str
) -> int:
    async def window(abuse: Abuse | None) -> tuple[list[float], int]:
        stop = asyncio.Event()
        searching = asyncio.create_task(victim(url, *victim_of, questions, stop))
        abusing = asyncio.create_task(abuse(url, *abuser, stop)) if abuse else None
        await asyncio.sleep(seconds)
        stop.set()
        latencies = await searching
        sent = await abusing if abusing else 0
        return latencies, sent

    quiet, _ = await window(None)
    base = p50_p95_p99(quiet)
    print(f"quiet baseline: {len(quiet)} searches, p50 {base[0]:.1f} ms, p95 {base[1]:.1f} ms, p99 {base[2]:.1f} ms")
    failures = 0
    for label, abuse in [(label, abuse) for label, abuse in ABUSES if only in label]:
        latencies, sent = await window(abuse)
        p50, p95, p99 = p50_p95_p99(latencies)
        verdict = "ok" if p95 < BAR * base[1] else f"OVER {BAR:g}x"
        failures += verdict != "ok"
        print(
            f"{label}: {sent} requests; victim p50 {p50:.1f} ms, p95 {p95:.1f} ms ({p95 / base[1]:.1f}x), "
            f"p99 {p99:.1f} ms: {verdict}"
        )
        await asyncio.sleep(2)  # let what the abuse left settle
    return failures


async def seed(settings: Settings, dsn: str, memories: int) -> tuple[tuple[str, str], tuple[str, str]]:
    engram = await open_engram(settings, dsn)
    try:
        rng = random.Random(5)
        victim_ctx, victim_key = await engram.tenants.create(f"victim-{rng.randrange(10**6)}")
        abuser_ctx, abuser_key = await engram.tenants.create(f"abuser-{rng.randrange(10**6)}")
        texts = realistic.MIXES[0].texts(memories, rng)
        for start in range(0, len(texts), 250):
            await engram.writes.write_batch(victim_ctx, [NewMemory(content=t) for t in texts[start : start + 250]])
        return (victim_ctx.name, victim_key), (abuser_ctx.name, abuser_key)
    finally:
        await engram.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15, help="length of each window")
    parser.add_argument("--memories", type=int, default=500, help="the searching tenant's memories")
    parser.add_argument("--only", default="", help="the abuses whose description holds this")
    args = parser.parse_args()
    if reason := realistic.missing():
        raise SystemExit(f"the abuse bench needs the evaluation sets for its realistic text: {reason}")
    with own_database("engram-abuse-") as dsn:
        victim_of, abuser = asyncio.run(seed(Settings(database_url=dsn), dsn, args.memories))
        with serving(dsn) as url:
            questions = realistic.questions("en")
            print(f"engram abuse bench: {os.cpu_count()} cores, {args.memories} memories, {args.seconds:g} s windows")
            failures = asyncio.run(measure(url, victim_of, abuser, args.seconds, questions, args.only))
        tried = sum(args.only in label for label, _ in ABUSES)
        print(f"\n{tried - failures} of {tried} abuses kept the victim's p95 under {BAR:g}x its baseline")


if __name__ == "__main__":
    socket.setdefaulttimeout(120)
    main()
