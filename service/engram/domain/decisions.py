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

from dataclasses import dataclass
from uuid import UUID

from engram.domain.judgement import MergeVerdict, Relation
from engram.domain.models import Memory


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
    asked: bool = False  # the caller named it in ``replaces``


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
