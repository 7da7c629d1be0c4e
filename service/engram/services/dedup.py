"""Before a write: is this fact already stored (touch), a detail of one (merge), a change of one
(supersede), or new (insert)? Numbers and identifiers that differ always mean a new fact, and so
do events that happened a day or more apart."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engram.domain.dedup import Thresholds, happened_apart
from engram.domain.judgement import MergeVerdict, Relation
from engram.domain.lifecycle import may_be_same_fact
from engram.domain.models import Memory
from engram.judge import Judge
from engram.judge.rules import announces_change, relate_by_rules
from engram.store.memories import MemoryRow


@dataclass(frozen=True)
class Target:
    """What a new row relates to: a stored memory, or an earlier row of the same batch."""

    memory: Memory | None = None
    batch_index: int | None = None


@dataclass(frozen=True)
class Decision:
    relation: Relation  # different = insert
    target: Target | None = None
    exact: bool = False
    similarity: float = 1.0
    verdict: MergeVerdict | None = None


# A statement announcing a change ("I switched to tea") shares few words with what it replaces
# ("I like coffee"): it is judged against memories this much below the judge threshold too.
CHANGE_MARGIN = 0.1


def floor(thresholds: Thresholds) -> float:
    """The lowest similarity at which a stored memory is looked at."""
    return max(0.0, thresholds.judge - CHANGE_MARGIN)


async def relate(new: str, existing: str, similarity: float, thresholds: Thresholds, judge: Judge) -> MergeVerdict:
    """The merge decision for one pair, as the write path, consolidation and calibration make it."""
    in_view = similarity >= thresholds.judge or (similarity >= floor(thresholds) and announces_change(new))
    if not in_view or not may_be_same_fact(new, existing):
        return MergeVerdict(relation=Relation.different, reason="not similar enough, or numbers differ")
    if similarity >= thresholds.touch:
        # Near-identical wording: the rules catch a reversal or negation; otherwise the same fact.
        return relate_by_rules(new, existing, similarity, thresholds.touch)
    return await judge.relate(new, existing, similarity)


async def plan(
    rows: list[MemoryRow],
    exact: dict[str, Memory],
    neighbours: list[list[tuple[Memory, float]]],
    thresholds: Thresholds,
    judge: Judge,
) -> list[Decision]:
    """One decision per row, in order; later rows may relate to earlier rows of the batch."""
    decisions: list[Decision] = []
    for i, row in enumerate(rows):
        if row.dedup_key in exact:
            decisions.append(Decision(Relation.same, Target(memory=exact[row.dedup_key]), exact=True))
            continue
        earlier = _earlier_rows(rows, decisions, i, floor(thresholds))
        if earlier is not None and earlier[1] >= 1.0 - 1e-6 and rows[earlier[0]].dedup_key == row.dedup_key:
            decisions.append(Decision(Relation.same, Target(batch_index=earlier[0]), exact=True))
            continue
        candidates = [
            (Target(memory=m), m.content, s)
            for m, s in neighbours[i]
            if not happened_apart(row.occurred_at, m.occurred_at)
        ]
        if earlier is not None and not happened_apart(row.occurred_at, rows[earlier[0]].occurred_at):
            j, similarity = earlier
            candidates.append((Target(batch_index=j), rows[j].content, similarity))
        decisions.append(await _first_related(row.content, candidates, thresholds, judge))
    return decisions


async def _first_related(
    content: str, candidates: list[tuple[Target, str, float]], thresholds: Thresholds, judge: Judge
) -> Decision:
    for target, existing, similarity in sorted(candidates, key=lambda c: -c[2]):
        verdict = await relate(content, existing, similarity, thresholds, judge)
        if verdict.relation != Relation.different:
            return Decision(verdict.relation, target, similarity=similarity, verdict=verdict)
    return Decision(Relation.different)


def scope_of(row: MemoryRow) -> tuple[str, str | None]:
    """Session and task memories only relate within their own session or task."""
    scoped = {"session": row.session_id, "task": row.task_id}
    return row.layer, scoped.get(row.layer)


def _earlier_rows(rows: list[MemoryRow], decisions: list[Decision], i: int, floor: float) -> tuple[int, float] | None:
    """The most similar earlier row of this batch that will be inserted, in the same layer and scope."""
    best: tuple[int, float] | None = None
    for j in range(i):
        if decisions[j].relation not in (Relation.different, Relation.conflict):
            continue
        if scope_of(rows[j]) != scope_of(rows[i]):
            continue
        similarity = float(np.dot(rows[i].embedding, rows[j].embedding))
        if similarity >= floor and (best is None or similarity > best[1]):
            best = (j, similarity)
    return best
