"""Scheduled consolidation: merge redundant memories; with an LLM, derive higher-level memories
from clusters of related ones (linked to their sources, which stay)."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import asyncpg
import numpy as np
from pydantic import BaseModel

from engram.domain.dedup import Thresholds
from engram.domain.judgement import Relation
from engram.domain.models import Event, HistoryRow, Memory, MemoryType, NewMemory, Status, WriteOutcome
from engram.domain.tenancy import TenantContext
from engram.judge import Judge
from engram.observability import metrics
from engram.services.dedup import relate
from engram.services.writes import WriteService
from engram.store import memories as repo

ACTOR = "consolidation"
MAX_MEMORIES = 5000  # per run: the most recently used
CLUSTER_SIZES = range(3, 9)


class MergedPair(BaseModel):
    kept: UUID
    superseded: UUID
    similarity: float


class Derived(BaseModel):
    memory: Memory
    sources: list[UUID]


class ConsolidationReport(BaseModel):
    dry_run: bool
    merged: list[MergedPair]
    derived: list[Derived]


class ConsolidationService:
    def __init__(
        self, pool: asyncpg.Pool, writes: WriteService, judge: Judge, thresholds_for: Callable[[str], Thresholds]
    ) -> None:
        self._pool = pool
        self._writes = writes
        self._judge = judge
        self._thresholds_for = thresholds_for

    async def run(self, ctx: TenantContext, dry_run: bool = False) -> ConsolidationReport:
        """Consolidate the memories of the context's user, else of every owner, each apart: one
        user's memories are never merged with another's, nor with the tenant's own."""
        async with self._pool.acquire() as conn:
            rows = await repo.active_with_vectors(conn, ctx.schema, MAX_MEMORIES, ctx.user)
        owners: dict[str | None, list[tuple[Memory, np.ndarray]]] = {}
        for memory, vector in rows:
            owners.setdefault(memory.user_id, []).append((memory, vector))
        merged, derived = [], []
        for owned in owners.values():
            pairs, made = await self._consolidate(ctx, owned, dry_run)
            merged += pairs
            derived += made
        if not dry_run:
            metrics.job_runs.labels("consolidation", ctx.name).inc()
            metrics.job_changes.labels("consolidation", "merged").inc(len(merged))
            metrics.job_changes.labels("consolidation", "derived").inc(len(derived))
        return ConsolidationReport(dry_run=dry_run, merged=merged, derived=derived)

    async def _consolidate(
        self, ctx: TenantContext, rows: list[tuple[Memory, np.ndarray]], dry_run: bool
    ) -> tuple[list[MergedPair], list[Derived]]:
        """Merge the redundant memories of one owner, and derive from their clusters."""
        memories = [m for m, _ in rows]
        sims = _similarities(np.stack([v for _, v in rows]))
        thresholds = self._thresholds_for(ctx.embedding_model)
        merged = await self._redundant_pairs(memories, sims, thresholds)
        if not dry_run:  # the report says what was done, not what was planned
            merged = [pair for pair in merged if await self._merge(ctx, pair)]
        gone = {p.superseded for p in merged}
        return merged, await self._derive(ctx, memories, sims, thresholds.judge, gone, dry_run)

    async def _redundant_pairs(
        self, memories: list[Memory], sims: np.ndarray, thresholds: Thresholds
    ) -> list[MergedPair]:
        """Pairs the write path would have merged ("same"), each memory in at most one pair."""
        pairs, used = [], set()
        for i, j in zip(*np.nonzero(np.triu(sims >= thresholds.touch, k=1)), strict=True):
            a, b = memories[i], memories[j]
            if a.id in used or b.id in used:
                continue
            verdict = await relate(b.content, a.content, float(sims[i, j]), thresholds, self._judge)
            if verdict.relation == Relation.same:
                kept, other = (a, b) if (a.access_count, b.created_at) >= (b.access_count, a.created_at) else (b, a)
                pairs.append(MergedPair(kept=kept.id, superseded=other.id, similarity=round(float(sims[i, j]), 4)))
                used |= {a.id, b.id}
        return pairs

    async def _merge(self, ctx: TenantContext, pair: MergedPair) -> bool:
        """Merge one pair if both memories are still active (another run, a write or a forget may
        have got there first): nothing is superseded twice."""
        async with self._writes.turn(ctx.schema) as (conn, _):
            other = await repo.get(conn, ctx.schema, pair.superseded, lock=True)
            kept = await repo.get(conn, ctx.schema, pair.kept, lock=True)
            if other is None or kept is None or Status.active != other.status or Status.active != kept.status:
                return False
            await repo.update(
                conn, ctx.schema, other.id, {"status": "superseded", "superseded_by": kept.id, "newer_id": None}
            )
            moved = await repo.move_marks(conn, ctx.schema, other.id, kept.id)
            kept = await repo.touch(conn, ctx.schema, kept.id, other.mentions)
            details = {"similarity": pair.similarity, "merged_with": str(other.id), "content": other.content}
            await repo.add_history(
                conn,
                ctx.schema,
                HistoryRow(kept.id, Event.merged, kept.content, ACTOR, details),
                HistoryRow(
                    other.id,
                    Event.superseded,
                    other.content,
                    ACTOR,
                    {"superseded_by": str(kept.id), "reason": "redundant"},
                ),
                *(
                    HistoryRow(m.id, Event.marked, m.content, ACTOR, {"newer": str(kept.id), "reason": "merged"})
                    for m in moved
                ),
            )
        return True

    async def _derive(
        self,
        ctx: TenantContext,
        memories: list[Memory],
        sims: np.ndarray,
        floor: float,
        gone: set[UUID],
        dry_run: bool,
    ) -> list[Derived]:
        covered = {frozenset(m.derived_from) for m in memories if m.derived_from}
        derived = []
        for cluster in _clusters(sims, floor):
            members = [memories[i] for i in cluster if memories[i].id not in gone and not memories[i].derived_from]
            ids = frozenset(m.id for m in members)
            if len(members) not in CLUSTER_SIZES or any(ids <= c for c in covered):
                continue
            content = await self._judge.derive(members)
            if not content or dry_run:
                continue
            item = NewMemory(
                content=content,
                type=MemoryType.fact,
                importance=max(m.importance for m in members),
                source="consolidation",
                user_id=members[0].user_id,  # one owner's cluster
            )
            result = (await self._writes.write_batch(ctx, [item], ACTOR, derived_from=sorted(ids)))[0]
            if result.outcome == WriteOutcome.created:
                await self._record_derivation(ctx, result.memory, sorted(ids))
                derived.append(Derived(memory=result.memory, sources=sorted(ids)))
        return derived

    async def _record_derivation(self, ctx: TenantContext, memory: Memory, sources: list[UUID]) -> None:
        async with self._pool.acquire() as conn:
            details = {"sources": [str(s) for s in sources]}
            await repo.add_history(
                conn, ctx.schema, HistoryRow(memory.id, Event.derived, memory.content, ACTOR, details)
            )


def _similarities(vectors: np.ndarray) -> np.ndarray:
    return vectors @ vectors.T


def _clusters(sims: np.ndarray, floor: float) -> list[list[int]]:
    """Connected components of the graph of pairs at or above floor (singletons left out)."""
    n = len(sims)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(sims >= floor, k=1)), strict=True):
        parent[root(int(i))] = root(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]
