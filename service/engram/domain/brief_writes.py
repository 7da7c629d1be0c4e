"""What a write answers an agent: what happened, the memory that now holds the fact, what it
retired and what it may update; every field of each only with detail="full" (an agent's context
pays for every byte, and a write's full answer repeats the fact it was just given)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field

from engram.domain.models import Candidate, MemoryType, WriteOutcome, WriteResult
from engram.domain.search import Brief, BriefMemory, Detail


class BriefCandidate(Brief):
    """An older memory the new fact may update: pass its id in replaces if it is no longer true."""

    id: UUID
    content: str
    type: MemoryType
    date: datetime = Field(description="when it happened, else when it was stored")
    marked: bool | None = Field(None, description="true: this write marked it as perhaps replaced (see `newer`)")
    similarity: float | None = Field(None, description="cosine similarity to the new fact, with detail='full'")

    @classmethod
    def of(cls, candidate: Candidate, detail: Detail) -> BriefCandidate:
        return cls(
            id=candidate.id,
            content=candidate.content,
            type=candidate.type,
            date=candidate.date.replace(microsecond=0),
            marked=True if candidate.marked else None,
            similarity=candidate.similarity if detail == Detail.full else None,
        )


class BriefWrite(Brief):
    outcome: WriteOutcome
    memory: BriefMemory = Field(description="the memory that now holds the fact")
    external_id: str | None = None
    superseded: list[BriefMemory] | None = Field(None, description="the older memories this write retired")
    candidates: list[BriefCandidate] | None = Field(
        None,
        description="active older memories the new fact may update, closest first; if it makes one no longer "
        "true, write it again with replaces=[its id]",
    )

    @classmethod
    def of(cls, result: WriteResult, detail: Detail) -> BriefWrite:
        return cls(
            outcome=result.outcome,
            memory=BriefMemory.of(result.memory, detail),
            external_id=result.external_id,
            superseded=[BriefMemory.of(m, detail) for m in result.superseded] or None,
            candidates=[BriefCandidate.of(c, detail) for c in result.candidates] or None,
        )


class BriefBatch(Brief):
    results: list[BriefWrite] = Field(description="one per item, in the order given")

    @classmethod
    def of(cls, results: list[WriteResult], detail: Detail) -> BriefBatch:
        return cls(results=[BriefWrite.of(r, detail) for r in results])


class BriefRemember(Brief):
    """What remember kept of a turn: one result per fact (none: nothing durable was said)."""

    results: list[BriefWrite]
    skipped: str | None = Field(None, description="why nothing was kept, when nothing was")
    judge: str | None = Field(None, description="rules or the LLM that read the turn, with detail='full'")

    @classmethod
    def of(cls, results: list[WriteResult], judge: str, reason: str, detail: Detail) -> BriefRemember:
        return cls(
            results=[BriefWrite.of(r, detail) for r in results],
            skipped=(reason or "nothing durable") if not results else None,
            judge=judge if detail == Detail.full else None,
        )
