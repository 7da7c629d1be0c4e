"""Before a write: is this fact already stored (touch), a detail of one (merge), a change of some
(supersede every memory it replaces), or new (insert)? A transcript turn is only ever an exact
duplicate or new. Numbers and identifiers that differ are never left to a model, and events that
happened a day or more apart are two events."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from uuid import UUID

import numpy as np

from engram.domain.boundary import readable
from engram.domain.decisions import Decision, Insert, Looked, Mark, Merge, Retirement, Target, Touch
from engram.domain.dedup import Thresholds, happened_apart
from engram.domain.judgement import MergeVerdict, Relation
from engram.domain.lifecycle import may_be_same_fact, numbers_of
from engram.domain.models import Kind, Memory
from engram.domain.relations import about_someone_else, announces_change, announces_change_outright, relate_statements
from engram.judge import Judge
from engram.services.slices import Slices
from engram.store.memories import MemoryRow

# Verdicts that retire or mark: never of another person's fact on a judge's word.
CHANGES = frozenset({Relation.conflict, Relation.may_update})


def _kept_apart(verdict: MergeVerdict) -> MergeVerdict:
    return MergeVerdict(relation=Relation.different, reason=f"about someone else ({verdict.reason})")


@dataclass(frozen=True)
class Neighbour:
    target: Target
    content: str
    similarity: float
    same_slot: bool


# A statement announcing a change ("I switched to tea") shares few words with what it replaces
# ("I like coffee"): it is judged against memories this much below the judge threshold too, and
# down to the model's wide threshold when it says so outright ("I've moved entirely to a Mac"
# replaces "I use Windows", cosine 0.34 with USE).
CHANGE_MARGIN = 0.1
# Statements of one slot, and nearest other facts, looked at per new fact.
SLOT_MATES = 20
NEAREST = 8


def floor(new: str, thresholds: Thresholds, judge: Judge) -> float:
    """The lowest similarity at which a stored memory is looked at for a new statement: a judge with
    a wide view (an LLM, which reads meaning) is shown the nearest memories whatever their
    similarity; the rules look lower for a change announced outright."""
    if judge.wide_view:
        return -1.0
    if announces_change_outright(new):
        return _wide(thresholds)
    return max(0.0, thresholds.judge - CHANGE_MARGIN)


def _wide(thresholds: Thresholds) -> float:
    return thresholds.wide if thresholds.wide is not None else thresholds.judge - CHANGE_MARGIN


def in_view(new: str, similarity: float, thresholds: Thresholds, judge: Judge, same_slot: bool = False) -> bool:
    """Whether a stored memory is looked at: the same slot, or similar enough (a change a little
    less, a change announced outright less still); a judge with a wide view (an LLM) sees all the
    nearest memories it is given."""
    return (
        judge.wide_view
        or same_slot
        or similarity >= thresholds.judge
        or (similarity >= thresholds.judge - CHANGE_MARGIN and announces_change(new))
        or (similarity >= _wide(thresholds) and announces_change_outright(new))
    )


async def relate(
    new: str, existing: str, similarity: float, thresholds: Thresholds, judge: Judge, same_slot: bool = False
) -> MergeVerdict:
    """The merge decision for one pair, as consolidation and calibration make it (the write path
    asks about all of a new fact's candidates at once: relate_all)."""
    return (await relate_all(new, [(existing, similarity, same_slot)], thresholds, judge))[0]


async def relate_all(
    new: str, candidates: list[tuple[str, float, bool]], thresholds: Thresholds, judge: Judge
) -> list[MergeVerdict]:
    """How a new statement relates to each candidate (text, similarity, same slot): out of view is
    different; the rest go to the judge in one question. Two statements whose numbers or ids
    differ on both sides are never the same fact, whatever the judge says (order 12345 is not
    order 12346): at most one replaces the other (a new weight, a new phone number). A text with
    nothing visible (spaces, control or zero-width characters only, stored before such content
    was refused) relates to nothing: two such texts embed alike, and would be "the same words"."""
    verdicts: list[MergeVerdict] = []
    viewed: list[int] = []
    for i, (existing, similarity, same_slot) in enumerate(candidates):
        verdicts.append(MergeVerdict(relation=Relation.different, reason="not similar enough, not the same slot"))
        if not (readable(new) and readable(existing)):
            verdicts[i] = MergeVerdict(relation=Relation.different, reason="nothing visible to compare")
        elif in_view(new, similarity, thresholds, judge, same_slot):
            viewed.append(i)
    answers = await judge.relate_many(new, [(candidates[i][0], candidates[i][1]) for i in viewed]) if viewed else []
    for i, verdict in zip(viewed, answers, strict=True):
        existing = candidates[i][0]
        numbers_differ = not may_be_same_fact(new, existing) and numbers_of(new) and numbers_of(existing)
        if numbers_differ and verdict.relation in (Relation.same, Relation.supplement):
            verdict = relate_statements(new, existing)
        verdicts[i] = verdict
    return verdicts


def decide(
    related: list[tuple[Neighbour, MergeVerdict]], replaced: list[Memory] | None = None, new: str = ""
) -> Decision:
    """Every memory a new fact replaces is retired, whatever it goes into: a repeat touches the
    closest same fact, a detail merges into the closest one it adds to, else it is inserted.
    ``related``: the neighbours the judge looked at, with its verdicts; ``replaced``: the memories
    the caller says it replaces. Those the judge thinks it may replace are marked. Nothing of
    another person's is retired or marked on a judge's word (an LLM's included), only the caller's."""
    someone_else = {n.target.key for n, _ in related if new and about_someone_else(new, n.content)}
    related = [
        (n, v if n.target.key not in someone_else or v.relation not in CHANGES else _kept_apart(v)) for n, v in related
    ]
    named = {m.id: m for m in replaced or []}
    retire = [Retirement(n.target, v.reason) for n, v in related if v.relation == Relation.conflict]
    retire += [Retirement(Target(memory=m), "replaced, as the caller said", by_caller=True) for m in named.values()]
    retire = list({r.target.key: r for r in retire}.values())  # the caller's word last: it wins
    gone = {r.target.key for r in retire}
    marks = tuple(
        Mark(n.target, v.reason) for n, v in related if v.relation == Relation.may_update and n.target.key not in gone
    )
    looked = tuple(Looked(n.target, n.similarity, v.relation, n.target.key in someone_else) for n, v in related)
    retired = tuple(retire)

    def closest(relation: Relation) -> tuple[Neighbour, MergeVerdict] | None:
        matches = [(c, v) for c, v in related if v.relation == relation and c.target.key not in gone]
        return max(matches, key=lambda cv: cv[0].similarity) if matches else None

    if (same := closest(Relation.same)) is not None:
        candidate, verdict = same
        return Touch(
            target=candidate.target,
            similarity=candidate.similarity,
            verdict=verdict,
            retire=retired,
            marks=marks,
            looked=looked,
        )
    if (detail := closest(Relation.supplement)) is not None:
        candidate, verdict = detail
        return Merge(
            target=candidate.target,
            content=verdict.merged_content or candidate.content,
            similarity=candidate.similarity,
            verdict=verdict,
            retire=retired,
            marks=marks,
            looked=looked,
        )
    conflicts = [(c, v) for c, v in related if v.relation == Relation.conflict]
    if conflicts:
        nearest, verdict = max(conflicts, key=lambda cv: cv[0].similarity)
        return Insert(verdict=verdict, similarity=nearest.similarity, retire=retired, marks=marks, looked=looked)
    return Insert(retire=retired, marks=marks, looked=looked)


async def plan(
    rows: list[MemoryRow],
    exact: dict[str, Memory],
    neighbours: list[list[tuple[Memory, float]]],
    slot_mates: list[list[tuple[Memory, float]]],
    thresholds: Thresholds,
    judge: Judge,
    replaced: list[list[Memory]] | None = None,
) -> list[Decision]:
    """One decision per row, in order; later rows may relate to earlier rows of the batch.
    ``replaced``: per row, the memories its caller says it replaces."""
    decisions: list[Decision] = []
    vectors = np.stack([r.embedding for r in rows]).astype(np.float32)
    batch_similarity = vectors @ vectors.T  # every row to every row, once
    slices = Slices()
    for i, row in enumerate(rows):
        await slices.tick()
        replaces = replaced[i] if replaced else []
        named = tuple(Retirement(Target(memory=m), "replaced, as the caller said", by_caller=True) for m in replaces)
        if row.dedup_key in exact:
            same = exact[row.dedup_key]
            # said again after an earlier row of the batch retired it: the later word wins, it stays
            decisions = [_keeping(d, same.id) for d in decisions]
            decisions.append(Touch(target=Target(memory=same), exact=True, retire=named))
            continue
        twin = next((j for j in range(i) if rows[j].dedup_key == row.dedup_key and inserts(decisions[j])), None)
        if twin is not None:
            decisions.append(Touch(target=Target(batch_index=twin), exact=True, retire=named))
            continue
        if row.kind == Kind.turn:  # a transcript line is kept verbatim: never merged or superseded
            decisions.append(Insert(retire=named))
            continue
        low = floor(row.content, thresholds, judge)
        candidates = _candidates(rows, decisions, i, neighbours[i], slot_mates[i], low, batch_similarity[i])
        viewed = [c for c in candidates if in_view(row.content, c.similarity, thresholds, judge, c.same_slot)]
        shown = [(c.content, c.similarity, c.same_slot) for c in viewed]
        verdicts = await relate_all(row.content, shown, thresholds, judge)
        decisions.append(decide(list(zip(viewed, verdicts, strict=True)), replaces, row.content))
    return decisions


def _keeping(decision: Decision, memory_id: UUID) -> Decision:
    """The decision without retiring or marking ``memory_id``."""
    retire = tuple(r for r in decision.retire if r.target.key != memory_id)
    marks = tuple(m for m in decision.marks if m.target.key != memory_id)
    if len(retire) == len(decision.retire) and len(marks) == len(decision.marks):
        return decision
    return replace(decision, retire=retire, marks=marks)


def inserts(decision: Decision) -> bool:
    """Whether the decision stores a new memory."""
    return isinstance(decision, Insert)


def _candidates(
    rows: list[MemoryRow],
    decisions: list[Decision],
    i: int,
    neighbours: list[tuple[Memory, float]],
    slot_mates: list[tuple[Memory, float]],
    low: float,
    similarity: np.ndarray,
) -> list[Neighbour]:
    """Stored facts close to the row or of its slot, and the earlier rows of the batch that will be
    inserted, in the same layer and scope, as many as from the store (the closest, and those of
    its slot); not events that happened a day or more apart. ``similarity``: row i to every row."""
    row = rows[i]
    mates = {m.id for m, _ in slot_mates}
    found: dict[object, Neighbour] = {}
    for memory, sim in [*neighbours, *slot_mates]:
        if not happened_apart(row.occurred_at, memory.occurred_at):
            candidate = Neighbour(Target(memory=memory), memory.content, sim, memory.id in mates)
            found.setdefault(candidate.target.key, candidate)

    def admitted(j: int) -> bool:
        earlier = rows[j]
        return (
            inserts(decisions[j])
            and earlier.kind == Kind.fact
            and _scope(earlier) == _scope(row)
            and not happened_apart(row.occurred_at, earlier.occurred_at)
        )

    def of_slot(j: int) -> bool:
        return row.slot is not None and rows[j].slot == row.slot

    # closest first, and only as far as the floor: the rest of the batch is not looked at
    by_closeness = (int(j) for j in itertools.takewhile(lambda j: similarity[j] >= low, np.argsort(-similarity[:i])))
    close = list(itertools.islice((j for j in by_closeness if not of_slot(j) and admitted(j)), NEAREST))
    same_slot = [j for j in range(i) if of_slot(j) and admitted(j)]
    for j in [*close, *same_slot[-SLOT_MATES:]]:
        found[("batch", j)] = Neighbour(Target(batch_index=j), rows[j].content, float(similarity[j]), of_slot(j))
    return sorted(found.values(), key=lambda c: -c.similarity)


def _scope(row: MemoryRow) -> tuple[str, str | None]:
    """Session and task memories only relate within their own session or task."""
    scoped = {"session": row.session_id, "task": row.task_id}
    return row.layer, scoped.get(row.layer)
