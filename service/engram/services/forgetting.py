"""Scheduled forgetting: expire short-lived layers, forget decayed memories the judge lets go,
purge what stayed forgotten past the retention period. Every step lands in the history, and a
dry run says why each candidate would go and why each survivor stays."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg
from pydantic import BaseModel, Field

from engram.domain.lifecycle import Assessment, DecayInput, assess
from engram.domain.models import Memory
from engram.domain.retention import Lifetimes, Retention
from engram.domain.tenancy import TenantContext
from engram.errors import Forbidden, NotFound
from engram.judge import Judge
from engram.observability import metrics
from engram.services.memories import MemoryService
from engram.settings import LifecycleSettings
from engram.store import memories as repo
from engram.store import tenant_meta

ACTOR = "forgetting"
# Survivors listed one by one in a report, the closest to being forgotten first (all are counted).
SURVIVORS_LISTED = 200


class Candidate(BaseModel):
    memory: Memory
    score: float = Field(description="decay score")
    reason: str = Field(description="why the schedule would forget it")
    forget: bool = Field(description="the judge's final decision")
    judge_reason: str = Field("", description="why the judge let it go or kept it")


class Survivor(BaseModel):
    memory_id: UUID
    content: str
    score: float = Field(description="decay score")
    reason: str = Field(description="why it stays")
    reinforced_at: datetime = Field(description="last stated, used or restored: decay counts from here")


class ForgetReport(BaseModel):
    dry_run: bool
    at: datetime = Field(description="the time decay was measured at")
    threshold: float = Field(description="decay below this makes a memory a candidate")
    daily_decay: float = Field(description="how much decay falls each day without reinforcement")
    candidates: list[Candidate]
    forgotten: list[UUID]
    expired: list[UUID] = Field(
        description="memories past their lifetime: their layer's or their type's (the tenant's retention)"
    )
    purged: list[UUID]
    kept: list[Survivor] = Field(
        default_factory=list, description=f"memories that stay, the closest to going first (at most {SURVIVORS_LISTED})"
    )
    kept_by_reason: dict[str, int] = Field(
        default_factory=dict,
        description="how many memories stay, by reason: pinned, current fact, decay (above threshold), judge",
    )


def _expiry(lifetimes: Lifetimes, memory: Memory, now: datetime) -> str:
    return lifetimes.why_expired(memory.layer, memory.type, memory.created_at, now) or "its lifetime passed"


def _reason_kind(reason: str) -> str:
    return (
        reason.split(":")[0].split(" (")[0] if reason.startswith(("pinned", "a current")) else "decay above threshold"
    )


class ForgettingService:
    def __init__(self, pool: asyncpg.Pool, memories: MemoryService, judge: Judge, settings: LifecycleSettings):
        self._pool = pool
        self._memories = memories
        self._judge = judge
        self._settings = settings

    async def run(self, ctx: TenantContext, dry_run: bool = False, now: datetime | None = None) -> ForgetReport:
        """The job over the whole tenant, or, acting for a user, over that user's own memories."""
        owner = ctx.user
        started = datetime.now(UTC)  # what is used or changed after this is not the run's to judge
        now = now or started
        s = self._settings
        await self._memories.settle_uses(ctx)  # decay counts every use so far
        lifetimes = await self.lifetimes(ctx)
        async with self._pool.acquire() as conn:
            expired = await repo.expired(conn, ctx.schema, *lifetimes.cutoffs(now), owner)
            rows = await repo.decay_inputs(conn, ctx.schema, owner)
            retained_after = now - timedelta(days=lifetimes.purge_after_days)
            purgeable = await repo.purgeable(conn, ctx.schema, retained_after, owner)
        gone = {m.id for m in expired}  # outlived its lifetime: no need to weigh its decay
        assessed = [(row, self._assess(row, now)) for row in rows if row["id"] not in gone]
        candidates = [await self._candidate(ctx, row["id"], a) for row, a in assessed if a.candidate]
        candidates.sort(key=lambda c: c.score)
        kept = [(row, a) for row, a in assessed if not a.candidate]
        kept.sort(key=lambda ra: ra[1].score)
        survivors = [
            Survivor(
                memory_id=row["id"],
                content=row["content"],
                score=a.score,
                reason=a.reason,
                reinforced_at=row["reinforced_at"],
            )
            for row, a in kept[:SURVIVORS_LISTED]
        ]
        counts = Counter(a.why for _, a in kept)
        counts.update("judge" for c in candidates if not c.forget)
        report = ForgetReport(
            dry_run=dry_run,
            at=now,
            threshold=s.forget_threshold,
            daily_decay=s.decay.daily_decay,
            candidates=candidates,
            forgotten=[c.memory.id for c in candidates if c.forget],
            expired=[m.id for m in expired],
            purged=purgeable,
            kept=survivors,
            kept_by_reason=dict(counts),
        )
        if dry_run:
            return report
        expiries = [(m.id, _expiry(lifetimes, m, now)) for m in expired]
        applied = report.model_copy(
            update={
                "expired": await self._forget(ctx, expiries, started),
                "forgotten": await self._forget(
                    ctx, [(c.memory.id, f"{c.reason}; {c.judge_reason}") for c in candidates if c.forget], started
                ),
                "purged": await self._purge(ctx, purgeable, retained_after),
            }
        )
        metrics.job_runs.labels("forgetting", ctx.name).inc()
        for change in ("forgotten", "expired", "purged"):
            metrics.job_changes.labels("forgetting", change).inc(len(getattr(applied, change)))
        return applied

    async def retention(self, ctx: TenantContext) -> Retention:
        """The tenant's retention as it set it (empty: the service's defaults)."""
        async with self._pool.acquire() as conn:
            return Retention.model_validate(await tenant_meta.read_retention(conn, ctx.schema))

    async def set_retention(self, ctx: TenantContext, retention: Retention) -> Retention:
        """Replace the tenant's retention; the next run of the schedule applies it. Needs the
        tenant's key (a user's key cannot change the tenant's policy)."""
        if ctx.user is not None:
            raise Forbidden(f"a key acting for user {ctx.user!r} cannot change the tenant's retention", field="user_id")
        async with self._pool.acquire() as conn:
            await tenant_meta.write_retention(conn, ctx.schema, retention.model_dump(mode="json", exclude_none=True))
        return retention

    async def lifetimes(self, ctx: TenantContext) -> Lifetimes:
        """The tenant's retention with the service's defaults filled in."""
        s = self._settings
        return Lifetimes.of(await self.retention(ctx), s.session_ttl_hours / 24, s.task_ttl_days, s.retention_days)

    async def _forget(self, ctx: TenantContext, reasons: list[tuple[UUID, str]], started: datetime) -> list[UUID]:
        """Forget each memory still as the run saw it; what was used, changed or deleted meanwhile stays."""
        done = []
        for memory_id, reason in reasons:
            with contextlib.suppress(NotFound):
                if await self._memories.forget_if_unused(ctx, memory_id, started, ACTOR, reason):
                    done.append(memory_id)
        return done

    async def _purge(self, ctx: TenantContext, ids: list[UUID], forgotten_before: datetime) -> list[UUID]:
        done = []
        for memory_id in ids:
            with contextlib.suppress(NotFound):
                if await self._memories.purge(ctx, memory_id, ACTOR, forgotten_before=forgotten_before):
                    done.append(memory_id)
        return done

    def _assess(self, row: asyncpg.Record, now: datetime) -> Assessment:
        s = self._settings
        memory = DecayInput(
            importance=row["importance"],
            uses=row["access_count"],
            mentions=row["mentions"],
            reinforced_at=row["reinforced_at"],
            type=row["type"],
            kind=row["kind"],
            pinned=row["pinned"],
        )
        return assess(memory, now, s.decay, s.forget_threshold, s.unaccessed_days)

    async def _candidate(self, ctx: TenantContext, memory_id: UUID, assessment: Assessment) -> Candidate:
        memory = await self._memories.get(ctx, memory_id)
        verdict = await self._judge.confirm_forget(memory, assessment.score)
        return Candidate(
            memory=memory,
            score=assessment.score,
            reason=assessment.reason,
            forget=verdict.forget,
            judge_reason=verdict.reason,
        )
