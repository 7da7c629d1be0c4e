"""A session's date is when a thing was said, not when it happened (services/search.py
of_the_time): a memory whose text names its own time is of that time, read from when it was said;
one said soon after a time the query names may tell of it and keeps more of its score than one of
another time; a time window is a preference, never a cut."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest

NOW = datetime(2026, 12, 7, 12, tzinfo=UTC)


async def written(engram, ctx, said: dict[str, tuple[str, datetime]]) -> dict[UUID, str]:
    """Each memory (content, when it was said) written; its id -> its name."""
    ids = {}
    for name, (content, when) in said.items():
        ids[(await engram.writes.write(ctx, NewMemory(content=content, occurred_at=when))).memory.id] = name
    return ids


async def test_a_memory_is_of_the_time_its_text_names_from_when_it_was_said(engram, tenant):
    ctx, _ = tenant
    said = {
        "told": ("I finally cleaned my white sneakers last month", datetime(2026, 11, 15, tzinfo=UTC)),
        "soon after": ("My sneakers look new again after the cleaning", datetime(2026, 11, 20, tzinfo=UTC)),
        "long before": ("I cleaned my sneakers before the summer trip", datetime(2026, 5, 2, tzinfo=UTC)),
    }
    ids = await written(engram, ctx, said)
    result = await engram.search.search(
        ctx, SearchRequest(query="when did I clean my sneakers in October", top_k=3, now=NOW, explain=True)
    )
    assert result.explanation.time_window is not None  # October 2026
    fused = {ids[h.id]: h for h in result.explanation.fused if h.id in ids}
    assert fused["told"].time == 1.0  # "last month", said in November: October
    assert fused["long before"].time == 0.5  # the shipped outside_window
    assert fused["soon after"].time == 0.75  # may tell of it: half the difference more
    assert ids[result.hits[0].memory.id] == "told"
    assert {ids[h.memory.id] for h in result.hits} == set(said)  # a preference, not a cut


async def test_when_did_i_last_means_the_last_past_time_not_a_plan(engram, tenant):
    ctx, _ = tenant
    said = {
        "may": ("I went to the dentist for a cleaning", datetime(2026, 5, 10, tzinfo=UTC)),
        "september": ("I went to the dentist about my tooth", datetime(2026, 9, 1, tzinfo=UTC)),
        "plan": ("I have a dentist appointment on Thursday", datetime(2026, 12, 10, tzinfo=UTC)),
    }
    ids = await written(engram, ctx, said)
    for query in ("when did I last go to the dentist", "我上次去看牙医是什么时候"):
        result = await engram.search.search(ctx, SearchRequest(query=query, top_k=3, now=NOW))
        assert ids[result.hits[0].memory.id] == "september", query
