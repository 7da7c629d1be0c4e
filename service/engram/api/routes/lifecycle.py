"""REST: remembering from conversation, closing sessions and tasks, forgetting (and the tenant's
retention it applies) and consolidation."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from engram.api.deps import ActingDep, EngramDep, TenantDep, known_query
from engram.api.errors import ERROR_RESPONSES
from engram.domain.boundary import Text
from engram.domain.judgement import Turn
from engram.domain.models import Closed, Layer
from engram.domain.retention import Retention
from engram.services.consolidation import ConsolidationReport
from engram.services.forgetting import ForgetReport
from engram.services.ingest import RememberResult

router = APIRouter(
    prefix="/t/{tenant}/v1", tags=["lifecycle"], responses=ERROR_RESPONSES, dependencies=[Depends(known_query)]
)
ACTOR = "rest"
ScopeId = Annotated[Text, Path(min_length=1, max_length=200)]


@router.post("/remember")
async def remember(turn: Turn, ctx: TenantDep, engram: EngramDep) -> RememberResult:
    """Give one conversation turn; the judge decides which atomic facts to keep, and each is written
    through the same dedup pipeline as a direct write."""
    return await engram.ingest.remember(ctx, turn, actor=ACTOR)


@router.post("/sessions/{session_id}/close")
async def close_session(session_id: ScopeId, ctx: ActingDep, engram: EngramDep) -> Closed:
    """The session ended: its session-layer memories are forgotten (restorable)."""
    return Closed(closed=await engram.memories.close_scope(ctx, Layer.session, session_id, actor=ACTOR))


@router.post("/tasks/{task_id}/close")
async def close_task(task_id: ScopeId, ctx: ActingDep, engram: EngramDep) -> Closed:
    """The task ended: its task-layer memories are forgotten (restorable)."""
    return Closed(closed=await engram.memories.close_scope(ctx, Layer.task, task_id, actor=ACTOR))


@router.post("/forgetting/run")
async def run_forgetting(
    ctx: ActingDep, engram: EngramDep, dry_run: Annotated[bool, Query(description="change nothing")] = False
) -> ForgetReport:
    """The scheduled forgetting job, now. With dry_run: the current candidates and their decay scores."""
    return await engram.forgetting.run(ctx, dry_run=dry_run)


@router.get("/retention")
async def get_retention(ctx: TenantDep, engram: EngramDep) -> Retention:
    """How long the tenant keeps its memories: days per layer and per type, and the purge delay
    (what it leaves out keeps the service's defaults)."""
    return await engram.forgetting.retention(ctx)


@router.put("/retention")
async def set_retention(retention: Retention, ctx: TenantDep, engram: EngramDep) -> Retention:
    """Replace the tenant's retention, e.g. `{"layers": {"session": 7}, "types": {"event": 365},
    "purge_after_days": 30}`: memories older than their layer's or their type's lifetime are
    forgotten by the next run of the schedule, and purged after the purge delay. `{}` restores
    the defaults. Needs the tenant's key."""
    return await engram.forgetting.set_retention(ctx, retention)


@router.post("/consolidation/run")
async def run_consolidation(
    ctx: ActingDep, engram: EngramDep, dry_run: Annotated[bool, Query(description="change nothing")] = False
) -> ConsolidationReport:
    """The scheduled consolidation job, now."""
    return await engram.consolidation.run(ctx, dry_run=dry_run)
