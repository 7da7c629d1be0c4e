"""Fair shares: a tenant's intake (bytes per second, a burst, a wait or a 429), bulk work in
slices that rests while others are served, and owners taking turns on the document worker."""

import asyncio
import types

import numpy as np
import pytest

from engram.embedding.base import DOCUMENT_CHUNK, Embedder
from engram.errors import TooManyRequests
from engram.services import slices
from engram.services.intake import MAX_WAIT_SECONDS, MIN_COST, Intake


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_passes_then_a_tenant_waits_its_turn_then_is_refused():
    clock = Clock()
    intake = Intake(bytes_per_second=1000, burst_bytes=10_000, clock=clock)
    assert intake.charge("a", 10_000) == 0  # the burst
    assert intake.charge("a", 2000) == pytest.approx(2.0)  # two seconds of its share
    with pytest.raises(TooManyRequests) as refused:
        intake.charge("a", 4000)  # 6 s to wait: come back later
    assert refused.value.retry_after_seconds >= MAX_WAIT_SECONDS
    assert intake.charge("b", 10_000) == 0  # another tenant has its own share
    clock.now += 12  # the share refills, up to the burst
    assert intake.charge("a", 10_000) == 0


def test_even_an_empty_request_costs_something():
    intake = Intake(bytes_per_second=MIN_COST, burst_bytes=MIN_COST * 3, clock=Clock())
    waits = [intake.charge("a", 0) for _ in range(4)]
    assert waits[:3] == [0, 0, 0] and waits[3] == pytest.approx(1.0)


async def test_bulk_work_rests_only_while_another_request_is_served(monkeypatch):
    rests: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(seconds: float) -> None:
        rests.append(seconds)
        await real_sleep(0)

    # Only slices' own view of asyncio: a patched global sleep would also record the naps of
    # tasks an earlier test left running.
    monkeypatch.setattr(slices, "asyncio", types.SimpleNamespace(sleep=recorded))
    activity = slices.Activity()
    monkeypatch.setattr(slices, "ACTIVITY", activity)

    async def bulk(steps: int) -> None:
        with activity.request():
            work = slices.Slices(seconds=0, rest=0.01)
            for _ in range(steps):
                await work.tick()

    await bulk(3)  # alone: it yields, never rests
    assert rests == [0, 0, 0]
    rests.clear()
    with activity.request():  # a search in flight meanwhile
        await bulk(2)
    assert rests == [0.01, 0.01]
    rests.clear()
    await asyncio.gather(bulk(2), bulk(2))  # two bulk requests do not slow each other down
    assert set(rests) == {0}
    assert not activity.others_waiting()


class Recording(Embedder):
    """A stand-in model that records which owner's chunk it embeds, in order."""

    model_id, dim = "recording", 4

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []

    def _documents(self, texts: list[str]) -> np.ndarray:
        self.order.append(texts[0].split(":")[0])
        return np.ones((len(texts), self.dim), dtype=np.float32)

    def _query(self, text: str) -> np.ndarray:
        return np.ones(self.dim, dtype=np.float32)


async def test_owners_take_turns_a_chunk_each():
    """One tenant with three batches in flight still gets one chunk ahead of another's, not three."""
    model = Recording()
    try:
        batches = [[f"a:{n}:{i}" for i in range(2 * DOCUMENT_CHUNK)] for n in range(3)]
        theirs = [asyncio.create_task(model.embed_documents(texts, "a")) for texts in batches]
        await asyncio.sleep(0)  # a's batches are all under way when b asks
        mine = asyncio.create_task(model.embed_documents([f"b:{i}" for i in range(DOCUMENT_CHUNK)], "b"))
        vectors = await asyncio.gather(*theirs, mine)
    finally:
        model.close()
    assert [len(v) for v in vectors] == [2 * DOCUMENT_CHUNK] * 3 + [DOCUMENT_CHUNK]
    assert model.order.index("b") <= 1, model.order  # after a's chunk under way, not after three
