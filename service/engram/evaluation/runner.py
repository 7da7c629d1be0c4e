"""Run a benchmark through engram: each group's memories through the real write path into a
throwaway tenant, each question through the real search path, for every system configuration."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engram.domain.models import Kind, MemoryType, NewMemory
from engram.domain.search import SearchRequest
from engram.domain.tenancy import TenantContext
from engram.evaluation.baselines import bm25_ranker
from engram.evaluation.datasets import EvalCorpus, EvalGroup
from engram.evaluation.metrics import Scores, by_category
from engram.judge import build_rewriter
from engram.runtime import Engram, thresholds_for
from engram.services.search import SearchService
from engram.store import memories as repo

DEPTH = 10  # ranks scored (recall@10, NDCG@10)


@dataclass(frozen=True)
class System:
    """One retrieval configuration: settings overrides on top of the configured ones."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)


_NONE = {"vector_weight": 0.0, "retrieval_weight": 0.0, "keyword_weight": 0.0, "rule_weight": 0.0}
CHANNELS_ALONE = [
    System("vector only", _NONE | {"vector_weight": 1.0}),
    System("retrieval only", _NONE | {"retrieval_weight": 1.0}),
    System("keyword only", _NONE | {"keyword_weight": 1.0}),
    System("rule only", _NONE | {"rule_weight": 1.0}),
    System("no context", {"context_weight": 0.0}),
    System("no time words", {"understand_time": False}),
]
FULL = System("engram")
BM25 = "bm25 (baseline)"
# What the hybrid is made of, or could be replaced by: it must never do worse than any of them.
PARTS = ("vector only", "retrieval only", "keyword only", "rule only", BM25)


@dataclass
class Written:
    """What the write path did with a benchmark's memories before any question was asked."""

    superseded: int = 0  # memories retired by a later one
    marked: int = 0  # memories marked as perhaps replaced by a later one
    answers: int = 0  # memories some question's answer is in
    answers_retired: int = 0  # of those, retired (by the rules: nothing else replaced them)
    answers_marked: int = 0  # of those, marked (found, but ranked below the newer one)


@dataclass
class Run:
    corpus: str
    split: str
    scores: dict[str, dict[str, Scores]]  # system -> category -> scores
    write_seconds: float
    memories: int
    search_ms: dict[str, float]  # system -> mean latency per question
    written: Written = field(default_factory=Written)
    # Time the second vectors took to catch up after the writes (0 without the channel).
    retrieval_seconds: float = 0.0


def searcher(engram: Engram, system: System) -> SearchService:
    # Ranking quality is measured over the whole top 10: no cut makes it short.
    settings = engram.settings.retrieval.model_copy(update={"min_score": 0.0, "cut_ratio": 0.0, **system.overrides})
    rewriter = build_rewriter(engram.settings) if settings.rewrite else None  # only with an LLM configured
    layers = engram.settings.lifecycle.layer_weights
    noise_of = lambda model: thresholds_for(engram.settings, model).noise  # noqa: E731
    return SearchService(
        engram.pool,
        engram.nearest,
        engram.sums,
        engram.embedders,
        engram.cache,
        settings,
        layers,
        engram.access,
        rewriter,
        noise_of,
    )


async def load_group(
    engram: Engram, ctx: TenantContext, group: EvalGroup, written: Written | None = None
) -> dict[str, str]:
    """Write the memories in batches; returns external id -> id of the memory holding that fact
    now (dedup may have merged two turns into one memory, or superseded one by a later one).
    ``written``: adds up what the write path retired and marked, the answers among them."""
    holder: dict[str, str] = {}
    batch = engram.settings.max_batch_size
    for start in range(0, len(group.memories), batch):
        chunk = group.memories[start : start + batch]
        items = [
            NewMemory(
                content=m.content,
                kind=Kind.turn if m.conversation else Kind.fact,  # a conversation's turns are its transcript
                type=MemoryType.event,
                occurred_at=m.occurred_at,
                tags=list(m.tags),
                external_id=m.external_id,
                session_id=m.conversation,
            )
            for m in chunk
        ]
        for memory, result in zip(chunk, await engram.writes.write_batch(ctx, items), strict=True):
            holder[memory.external_id] = str(result.memory.id)
    async with engram.pool.acquire() as conn:
        successor = {str(k): str(v) for k, v in (await repo.superseded_links(conn, ctx.schema)).items()}
        marked = {str(m) for m in await repo.marked_ids(conn, ctx.schema)}
    if written is not None:
        answers = {holder[g] for q in group.questions for g in q.gold if g in holder}
        written.superseded += len(successor)
        written.marked += len(marked)
        written.answers += len(answers)
        written.answers_retired += len(answers & set(successor))
        written.answers_marked += len(answers & marked)
    for external_id, memory_id in holder.items():
        seen = set()
        while memory_id in successor and memory_id not in seen:
            seen.add(memory_id)
            memory_id = successor[memory_id]
        holder[external_id] = memory_id
    return holder


async def evaluate(
    engram: Engram,
    corpus: EvalCorpus,
    split: str,
    systems: Sequence[System],
    *,
    baseline: bool = True,
    progress: Callable[[str], None] = lambda _: None,
) -> Run:
    rankings: dict[str, list[tuple[str, list[str], frozenset[str]]]] = {s.name: [] for s in systems}
    elapsed: dict[str, float] = {s.name: 0.0 for s in systems}
    if baseline:
        rankings[BM25] = []
    services = {s.name: searcher(engram, s) for s in systems}
    write_seconds, retrieval_seconds, memories = 0.0, 0.0, 0
    written = Written()
    for group in corpus.groups:
        ctx, _ = await engram.tenants.create(f"eval-{uuid.uuid4().hex[:12]}")
        try:
            started = time.perf_counter()
            holder = await load_group(engram, ctx, group, written)
            write_seconds += time.perf_counter() - started
            started = time.perf_counter()
            await engram.retrieval.work(ctx)  # questions come once the second vectors caught up
            retrieval_seconds += time.perf_counter() - started
            memories += len(group.memories)
            progress(f"{corpus.name} {group.key}: {len(group.memories)} memories, {len(group.questions)} questions")
            for name, service in services.items():
                for question in group.questions:
                    gold = frozenset(holder[g] for g in question.gold)
                    started = time.perf_counter()
                    request = SearchRequest(query=question.text, top_k=DEPTH, now=question.asked_at)
                    result = await service.search(ctx, request)
                    elapsed[name] += time.perf_counter() - started
                    rankings[name].append((question.category, [str(h.memory.id) for h in result.hits], gold))
            if baseline:
                rank = bm25_ranker(group, DEPTH)
                for question in group.questions:
                    rankings[BM25].append((question.category, rank(question.text), question.gold))
        finally:
            await engram.tenants.drop(ctx.name)
    questions = max(corpus.questions, 1)
    return Run(
        corpus=corpus.name,
        split=split,
        scores={name: by_category(rows) for name, rows in rankings.items()},
        write_seconds=write_seconds,
        memories=memories,
        search_ms={name: 1000 * seconds / questions for name, seconds in elapsed.items()},
        written=written,
        retrieval_seconds=retrieval_seconds,
    )
