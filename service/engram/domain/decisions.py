"""What a write decides for each new memory, as types that cannot hold an impossible combination.

    Insert  a new memory (it supersedes what it retires, if anything)
    Touch   the fact is already stored (exactly, or in other words): one more mention of it
    Merge   a detail of a stored fact: the stored memory now holds both

Whatever the decision, it may also **retire** older memories (a change the judge is sure of, or
one the caller named in ``replaces``: superseded by the memory that now holds the fact, history
kept) and **mark** others (a change the judge is not sure of: both stay active, the older one
points at the newer one, search ranks it below). A decision also keeps the candidates it looked
at, which the write returns so that an agent can settle what the rules could not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from engram.domain.judgement import MergeVerdict, Relation
from engram.domain.models import Candidate, Memory, Status, WriteResult


@dataclass(frozen=True)
class Target:
    """What a new row relates to: a stored memory, or an earlier row of the same batch."""

    memory: Memory | None = None
    batch_index: int | None = None

    def __post_init__(self) -> None:
        if (self.memory is None) == (self.batch_index is None):
            raise ValueError("a target is a stored memory or an earlier row of the batch, exactly one")

    @property
    def key(self) -> UUID | tuple[str, int]:
        return self.memory.id if self.memory is not None else ("batch", self.batch_index or 0)


@dataclass(frozen=True)
class Retirement:
    """An older memory this write supersedes, and why."""

    target: Target
    reason: str
    by_caller: bool = False  # the caller named it in ``replaces``


@dataclass(frozen=True)
class Mark:
    """An older memory this write may have replaced: kept active, pointed at the new holder."""

    target: Target
    reason: str


@dataclass(frozen=True)
class Looked:
    """A candidate the decision looked at, and how the judge related it."""

    target: Target
    similarity: float
    relation: Relation
    someone_else: bool = False  # about another person: no update of the new fact's, whatever it says


@dataclass(frozen=True, kw_only=True)
class Insert:
    retire: tuple[Retirement, ...] = ()
    marks: tuple[Mark, ...] = ()
    looked: tuple[Looked, ...] = ()
    verdict: MergeVerdict | None = None  # of the closest memory it retires
    similarity: float = 1.0


@dataclass(frozen=True, kw_only=True)
class Touch:
    target: Target
    exact: bool = False  # the same text: a duplicate
    similarity: float = 1.0
    verdict: MergeVerdict | None = None
    retire: tuple[Retirement, ...] = ()
    marks: tuple[Mark, ...] = ()
    looked: tuple[Looked, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Merge:
    target: Target
    content: str  # what the target holds once merged
    similarity: float
    verdict: MergeVerdict
    retire: tuple[Retirement, ...] = ()
    marks: tuple[Mark, ...] = ()
    looked: tuple[Looked, ...] = ()


Decision = Insert | Touch | Merge


# How many of the memories a write looked at it returns, closest first.
CANDIDATES = 5


def with_candidates(
    results: list[WriteResult],
    decisions: list[Decision],
    marked: list[set[UUID]],
    memory_of: Callable[[Target], Memory],
    now: dict[UUID, Memory],
) -> list[WriteResult]:
    """Each result with the active memories its fact may update or contradict: those the decision
    looked at, as they are once the whole write is applied (``now``), still active, not another
    person's, and not a memory that holds a fact of this write."""
    held = {m.id for r in results for m in r.superseded} | {r.memory.id for r in results}
    out = []
    for result, decision, marks in zip(results, decisions, marked, strict=True):
        seen: dict[UUID, Candidate] = {}
        for looked in sorted(decision.looked, key=lambda x: (x.target.memory is None, -x.similarity)):
            memory = now.get(memory_of(looked.target).id)
            if memory is None or memory.id in held or memory.id in seen or looked.someone_else:
                continue
            if memory.status != Status.active:
                continue
            seen[memory.id] = Candidate(
                id=memory.id,
                content=memory.content,
                type=memory.type,
                date=memory.occurred_at or memory.created_at,
                created_at=memory.created_at,
                similarity=round(looked.similarity, 4),
                marked=memory.id in marks,
            )
        ranked = sorted(seen.values(), key=lambda c: (not c.marked, -c.similarity))
        out.append(result.model_copy(update={"candidates": ranked[:CANDIDATES]}))
    return out
