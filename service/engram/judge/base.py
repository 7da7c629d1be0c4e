"""The judge port."""

from __future__ import annotations

from abc import ABC, abstractmethod

from engram.domain.judgement import ForgetVerdict, MergeVerdict, Turn, TurnJudgement
from engram.domain.models import Memory


class Judge(ABC):
    name: str
    # Whether it may be shown every nearby memory (an LLM reads meaning), or only those the rules
    # can reason about (the same slot, or similar enough).
    wide_view: bool = False
    # Whether judging waits on another service (an LLM): such a judge is never asked under a lock.
    remote: bool = False

    @abstractmethod
    async def judge_turn(self, turn: Turn) -> TurnJudgement:
        """Should anything of this turn be remembered, and as which atomic facts?"""

    @abstractmethod
    async def relate(self, new: str, existing: str, similarity: float) -> MergeVerdict:
        """How a new statement relates to a similar stored memory."""

    async def relate_many(self, new: str, existing: list[tuple[str, float]]) -> list[MergeVerdict]:
        """How a new statement relates to each of several stored memories (text, similarity)."""
        return [await self.relate(new, text, similarity) for text, similarity in existing]

    @abstractmethod
    async def confirm_forget(self, memory: Memory, score: float) -> ForgetVerdict:
        """Final say before a decayed memory is forgotten, and why."""

    @abstractmethod
    async def derive(self, memories: list[Memory]) -> str | None:
        """A higher-level memory summarising related memories, or None."""
