"""engram's own quality sets through the real write and search paths, with production settings:
a Chinese query finds the English memory (and back) in the top 5 for at least 95% of
tests/data/crosslingual.jsonl; time words ("yesterday", "上周", "上次") pick the right one of
memories that differ only in when they happened (tests/data/temporal.json)."""

from pathlib import Path

from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest
from engram.evaluation.datasets import EvalGroup, load
from tests.conftest import unique_tenant

OWN = Path(__file__).resolve().parents[1] / "data"


async def ranked(engram, group: EvalGroup, top_k: int) -> dict[str, list[str]]:
    """question id -> external ids of the hits, searched as an agent would (min score applies)."""
    ctx, _ = await engram.tenants.create(unique_tenant("q"))
    items = [NewMemory(content=m.content, external_id=m.external_id, occurred_at=m.occurred_at) for m in group.memories]
    results = await engram.writes.write_batch(ctx, items)
    external = {r.memory.id: r.external_id for r in results}
    out = {}
    for question in group.questions:
        found = await engram.search.search(ctx, SearchRequest(query=question.text, top_k=top_k, now=question.asked_at))
        out[question.id] = [external[h.memory.id] for h in found.hits]
    return out


async def test_cross_language_queries_find_their_memory_in_the_top_5(engram):
    corpus = load("crosslingual", Path("unused"), OWN)
    assert sum(len(g.questions) for g in corpus.groups) >= 100  # 60 facts, each asked both ways
    found = {"zh->en": [], "en->zh": []}
    for group in corpus.groups:
        hits = await ranked(engram, group, 5)
        for question in group.questions:
            found[question.category].append(bool(question.gold & set(hits[question.id])))
    everything = found["zh->en"] + found["en->zh"]
    assert sum(everything) / len(everything) >= 0.95, {d: f"{sum(o)}/{len(o)}" for d, o in found.items()}
    for direction, outcomes in found.items():  # and neither direction lags far behind
        assert sum(outcomes) / len(outcomes) >= 0.9, (direction, sum(outcomes), len(outcomes))


async def test_time_words_pick_the_memory_of_that_time(engram):
    [diary] = load("temporal", Path("unused"), OWN).groups
    hits = await ranked(engram, diary, 3)
    first = [bool(q.gold & set(hits[q.id][:1])) for q in diary.questions]
    assert sum(first) / len(first) >= 0.9, [q.text for q, ok in zip(diary.questions, first, strict=True) if not ok]
