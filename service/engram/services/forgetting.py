"""Scheduled forgetting: expire short-lived layers, forget decayed memories the judge lets go,
purge what stayed forgotten past the retention period. Every step lands in the history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg
from pydantic import BaseModel, Field

from engram.domain.lifecycle import decay_score
from engram.domain.models import Layer, Memory
from engram.judge import Judge
from engram.observability import metrics
from engram.services.memories import MemoryService
from engram.settings import LifecycleSettings
from engram.store import memories as repo
from engram.store.schema import TenantContext

ACTOR = "forgetting"


class Candidate(BaseModel):
    memory: Memory
    score: float = Field(description="decay score")
    reason: str
    forget: bool = Field(description="the judge's final decision")


class ForgetReport(BaseModel):
    dry_run: bool
    candidates: list[Candidate]
    forgotten: list[UUID]
    expired: list[UUID] = Field(description="session/task memories past their time to live")
    purged: list[UUID]


class ForgettingService:
    def __init__(self, pool: asyncpg.Pool, memories: MemoryService, judge: Judge, settings: LifecycleSettings):
        self._pool = pool
        self._memories = memories
        self._judge = judge
        self._settings = settings

    async def run(self, ctx: TenantContext, dry_run: bool = False, now: datetime | None = None) -> ForgetReport:
        now = now or datetime.now(UTC)
        s = self._settings
        async with self._pool.acquire() as conn:
            expired = await repo.expired_scoped(
                conn, ctx.schema, now - timedelta(hours=s.session_ttl_hours), now - timedelta(days=s.task_ttl_days)
            )
            inputs = await repo.decay_inputs(conn, ctx.schema)
            purgeable = await repo.purgeable(conn, ctx.schema, now - timedelta(days=s.retention_days))
        candidates = [c for c in [await self._candidate(ctx, row, now) for row in inputs] if c is not None]
        candidates.sort(key=lambda c: c.score)
        report = ForgetReport(
            dry_run=dry_run,
            candidates=candidates,
            forgotten=[c.memory.id for c in candidates if c.forget],
            expired=[m.id for m in expired],
            purged=purgeable,
        )
        if dry_run:
            return report
        metrics.job_runs.labels("forgetting", ctx.name).inc()
        for change, ids in (("forgotten", report.forgotten), ("expired", report.expired), ("purged", report.purged)):
            metrics.job_changes.labels("forgetting", change).inc(len(ids))
        for memory in expired:
            layer = "session" if memory.layer == Layer.session else "task"
            await self._memories.forget(ctx, memory.id, ACTOR, reason=f"{layer} time to live passed")
        for c in candidates:
            if c.forget:
                await self._memories.forget(ctx, c.memory.id, ACTOR, reason=c.reason)
        for memory_id in purgeable:
            await self._memories.purge(ctx, memory_id, ACTOR)
        return report

    async def _candidate(self, ctx: TenantContext, row, now: datetime) -> Candidate | None:
        s = self._settings
        score = decay_score(row["importance"], row["access_count"], row["last_accessed_at"], now, s.decay)
        unused = row["access_count"] <= 1 and row["created_at"] < now - timedelta(days=s.unaccessed_days)
        if score >= s.forget_threshold and not unused:
            return None
        reason = (
            f"decay score {score:.3f} below {s.forget_threshold}"
            if score < s.forget_threshold
            else f"never recalled in {s.unaccessed_days} days"
        )
        memory = await self._memories.get(ctx, row["id"])
        return Candidate(
            memory=memory, score=round(score, 4), reason=reason, forget=await self._judge.confirm_forget(memory, score)
        )
