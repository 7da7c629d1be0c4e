"""Search request and response types (the scoring itself is domain/fusion.py)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from engram.domain.boundary import Count, Flag, Instant, Text
from engram.domain.fusion import FORMULA, ChannelHit, ChannelScores, FusedHit, Weights
from engram.domain.models import Memory, MemoryFilter

__all__ = ["Channel", "ChannelHit", "ChannelScores", "FusedHit", "SearchHit", "SearchRequest", "Weights"]


class Channel(StrEnum):
    vector = "vector"
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

    query: Text = Field(min_length=1, max_length=4000)
    top_k: Count | None = Field(None, description="default 5, capped by the server")
    filter: MemoryFilter = Field(default_factory=MemoryFilter)
    explain: Flag = Field(False, description="also return every channel's candidates (not counted as a use)")
    now: Instant | None = Field(
        None, description="the reference time for 'last week', '上次' and the like (default: the server's clock)"
    )


class SearchResult(BaseModel):
    hits: list[SearchHit]
    explanation: Explanation | None = None
