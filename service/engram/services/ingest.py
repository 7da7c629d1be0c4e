"""Remember from a conversation turn: the judge picks the atomic facts, the write pipeline stores them."""

from __future__ import annotations

from pydantic import BaseModel

from engram.domain.judgement import Turn, TurnJudgement
from engram.domain.models import Layer, NewMemory, WriteResult
from engram.domain.tenancy import TenantContext
from engram.errors import Conflict
from engram.judge import Judge
from engram.observability import metrics
from engram.services.writes import WriteService


class RememberResult(BaseModel):
    judgement: TurnJudgement
    judge: str
    results: list[WriteResult]


class IngestService:
    def __init__(self, writes: WriteService, judge: Judge) -> None:
        self._writes = writes
        self._judge = judge

    async def remember(self, ctx: TenantContext, turn: Turn, actor: str | None = None) -> RememberResult:
        ctx.user_for(turn.user_id)  # a user the caller may not act for is refused before any judging
        judgement = await self._judge.judge_turn(turn)
        results: list[WriteResult] = []
        if judgement.should_write and judgement.facts:
            items = [
                NewMemory(
                    content=fact.content,
                    type=fact.type,
                    layer=_layer(fact.layer, turn),
                    importance=fact.importance,
                    source=turn.source or "conversation",
                    occurred_at=turn.occurred_at,
                    now=turn.now,
                    session_id=turn.session_id,
                    task_id=turn.task_id,
                    user_id=turn.user_id,
                    agent_id=turn.agent_id,
                    replaces=turn.replaces if index == 0 else [],
                )
                for index, fact in enumerate(judgement.facts)
            ]
            results = await self._writes.write_batch(ctx, items, actor)
        elif turn.replaces:
            raise Conflict(
                "replaces: this turn states nothing to keep, so nothing replaces them; write the new fact "
                "with write_memory and replaces",
                field="replaces",
            )
        else:
            metrics.write_decisions.labels(ctx.name, "skipped").inc()
        return RememberResult(judgement=judgement, judge=self._judge.name, results=results)


def _layer(layer: Layer, turn: Turn) -> Layer:
    """A short-lived layer needs its session or task; without one the fact is kept long-term."""
    if (layer == Layer.session and not turn.session_id) or (layer == Layer.task and not turn.task_id):
        return Layer.long_term
    return layer
