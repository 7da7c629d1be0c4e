"""Search request and response types (the scoring itself is domain/fusion.py)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from engram.domain.boundary import Count, Flag, Instant, Query
from engram.domain.fusion import FORMULA, ChannelHit, ChannelScores, FusedHit, Weights
from engram.domain.models import Memory, MemoryFilter, MemoryPage, MemoryType, Status

__all__ = ["Channel", "ChannelHit", "ChannelScores", "FusedHit", "SearchHit", "SearchRequest", "Weights"]


class Channel(StrEnum):
    vector = "vector"
    retrieval = "retrieval"  # the second vector, of the retrieval model
    keyword = "keyword"
    rule = "rule"
    context = "context"  # lent by neighbouring memories of the same conversation
    time = "time"  # memories of the time the query names ("last week", "五月")


class SearchHit(BaseModel):
    memory: Memory
    score: float = Field(description="0..1: the channels' combined relevance, times the time and layer factors")
    channels: ChannelScores


class TimeFilter(BaseModel):
    """A time the query named ("last week", "五月"), as the window it was resolved to."""

    phrase: str
    start: datetime
    end: datetime


class Explanation(BaseModel):
    """Everything needed to see why a memory was (not) found, and to recompute each score."""

    formula: str = FORMULA
    weights: Weights
    noise: float = Field(0.0, description="the embedding model's noise level: vector evidence is 0 at or below it")
    outside_window: float = Field(description="the time factor of a memory outside the named time")
    cut_ratio: float = Field(description="hits scoring under this share of the best one are not returned")
    rewritten: str | None = Field(None, description="the search query the LLM made of a long query")
    rewrite_ms: float | None = Field(None, description="how long the rewrite took")
    searched_text: str = Field(description="the query as searched: rewritten, without its time words")
    time_window: TimeFilter | None = None
    time_only: bool = Field(
        False, description="the query asked only for a time: its memories are returned in time order"
    )
    prefer_recent: bool = Field(
        False, description="the query asked for the latest (上次, last time): the latest match comes first"
    )
    query_tokens: list[str]
    token_idf: dict[str, float] = Field(description="weight of each query token in the keyword channel")
    query_identifiers: list[str]
    candidates: dict[Channel, list[ChannelHit]]
    fused: list[FusedHit] = Field(description="every candidate, scored, before the cut and top_k")
    snippets: dict[UUID, str] = Field(
        default_factory=dict, description="the start of each candidate's content, to read the candidates"
    )


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Query = Field(min_length=1, max_length=4000)
    top_k: Count | None = Field(None, description="default 5, capped by the server")
    filter: MemoryFilter = Field(default_factory=MemoryFilter)
    explain: Flag = Field(False, description="also return every channel's candidates (not counted as a use)")
    now: Instant | None = Field(
        None, description="the reference time for 'last week', '上次' and the like (default: the server's clock)"
    )


class SearchResult(BaseModel):
    hits: list[SearchHit]
    explanation: Explanation | None = None


class Detail(StrEnum):
    brief = "brief"  # what an agent needs: id, content, type, date (and score)
    full = "full"  # every field of the memory, and each channel's evidence


class Brief(BaseModel):
    """Serialised without its empty fields: absent rather than null, as an agent's context pays for
    every byte."""

    @model_serializer(mode="wrap")
    def _without_nulls(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class BriefMemory(Brief):
    """A memory as an agent reads it: what it says, what kind, when, and its id to act on it.
    ``memory`` (every field) comes only with detail="full"."""

    id: UUID
    content: str
    type: MemoryType
    date: datetime = Field(description="when it happened, else when it was stored")
    status: Status | None = Field(None, description="given when not active")
    newer: UUID | None = Field(None, description="a newer memory that may have replaced this one")
    memory: Memory | None = Field(None, description="every field, with detail='full'")

    @classmethod
    def of(cls, memory: Memory, detail: Detail, **extra: Any) -> Any:
        return cls(
            id=memory.id,
            content=memory.content,
            type=memory.type,
            date=(memory.occurred_at or memory.created_at).replace(microsecond=0),
            status=None if memory.status == Status.active else memory.status,
            newer=memory.newer,
            memory=memory if detail == Detail.full else None,
            **extra,
        )


class BriefHit(BriefMemory):
    score: float = Field(description="0..1, higher is more relevant")
    channels: ChannelScores | None = Field(None, description="each channel's evidence, with detail='full'")


class BriefResult(Brief):
    """Search hits, best first, as brief as an agent needs them."""

    hits: list[BriefHit]
    explanation: Explanation | None = Field(None, description="with explain=true")

    @classmethod
    def of(cls, result: SearchResult, detail: Detail) -> BriefResult:
        hits = [
            BriefHit.of(
                h.memory,
                detail,
                score=h.score if detail == Detail.full else round(h.score, 3),
                channels=h.channels if detail == Detail.full else None,
            )
            for h in result.hits
        ]
        return cls(hits=hits, explanation=result.explanation)


class BriefPage(Brief):
    items: list[BriefMemory]
    next_cursor: str | None = Field(None, description="pass back to get the next page")

    @classmethod
    def of(cls, page: MemoryPage, detail: Detail) -> BriefPage:
        return cls(items=[BriefMemory.of(m, detail) for m in page.items], next_cursor=page.next_cursor)
