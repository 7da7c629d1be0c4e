"""Search request/response types and the pure weighted fusion of channel scores."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from engram.domain.models import Layer, Memory, MemoryFilter


class Channel(StrEnum):
    vector = "vector"
    keyword = "keyword"
    rule = "rule"
    context = "context"  # lent by neighbouring memories of the same conversation
    time = "time"  # memories of the time the query names ("last week", "五月")


class ChannelHit(BaseModel):
    """One candidate as a channel scored it (raw score, the channel's own scale)."""

    model_config = ConfigDict(frozen=True)

    id: UUID
    score: float
    rank: int


class ChannelScores(BaseModel):
    """A candidate's normalised score (0..1) in each channel."""

    vector: float = 0.0
    keyword: float = 0.0
    rule: float = 0.0
    context: float = Field(0.0, description="best score among its conversation neighbours, divided by distance")


class FusedHit(BaseModel):
    id: UUID
    score: float
    channels: ChannelScores


class Weights(BaseModel):
    vector: float
    keyword: float
    rule: float


class SearchHit(BaseModel):
    memory: Memory
    score: float = Field(description="fused score, 0..1")
    channels: ChannelScores


class TimeFilter(BaseModel):
    """A time the query named ("last week", "五月"), as the window it was resolved to."""

    phrase: str
    start: datetime
    end: datetime


class Explanation(BaseModel):
    """Everything needed to see why a memory was (not) found."""

    weights: Weights
    rewritten: str | None = Field(None, description="the search query the LLM made of a long query")
    rewrite_ms: float | None = Field(None, description="how long the rewrite took")
    searched_text: str = Field(description="the query as searched: rewritten, without its time words")
    time_window: TimeFilter | None = None
    prefer_recent: bool = Field(False, description="the query asked for the latest (上次, last time, recently)")
    query_tokens: list[str]
    token_idf: dict[str, float] = Field(description="weight of each query token in the keyword channel")
    query_identifiers: list[str]
    candidates: dict[Channel, list[ChannelHit]]
    fused: list[FusedHit]
    snippets: dict[UUID, str] = Field(
        default_factory=dict, description="the start of each candidate's content, to read the candidates"
    )


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4000)
    top_k: int | None = Field(None, ge=1, description="default 5, capped by the server")
    filter: MemoryFilter = Field(default_factory=MemoryFilter)
    explain: bool = False
    now: datetime | None = Field(
        None, description="the reference time for 'last week', '上次' and the like (default: the server's clock)"
    )


class SearchResult(BaseModel):
    hits: list[SearchHit]
    explanation: Explanation | None = None


def prefer_layers(fused: list[FusedHit], layers: dict[UUID, Layer], weights: dict[Layer, float]) -> list[FusedHit]:
    """Blend layers: each score times its layer's preference, best first again."""
    adjusted = [
        h.model_copy(update={"score": round(h.score * weights.get(layers[h.id], 1.0), 6)})
        for h in fused
        if h.id in layers
    ]
    adjusted.sort(key=lambda h: (-h.score, str(h.id)))
    return adjusted


@dataclass(frozen=True)
class QueryShape:
    """Which channels can speak for a query: a channel that cannot is left out of the weights."""

    language: str = "und"  # zh | en | und
    keywords: bool = True  # the query has tokens for the keyword channel
    identifiers: bool = True  # the query holds identifiers for the rule channel


@dataclass(frozen=True)
class Link:
    """``neighbour`` was written ``distance`` places from ``anchor`` in the same conversation."""

    anchor: UUID
    neighbour: UUID
    distance: int


def _crosses_language(query: str, memory: str | None) -> bool:
    return query in ("zh", "en") and memory in ("zh", "en") and query != memory


def fuse(
    vector_similarity: dict[UUID, float],
    keyword: list[ChannelHit],
    rule: list[ChannelHit],
    weights: Weights,
    shape: QueryShape | None = None,
    languages: dict[UUID, str] | None = None,
) -> list[FusedHit]:
    """Weighted mean of per-channel scores, each on an absolute 0..1 scale, best first.

    Scores, not ranks, are fused: plain reciprocal-rank fusion lets keyword hits (which only
    come from the query's own language) drown cross-language vector hits. The vector score is
    the cosine similarity itself (known for every candidate), the keyword score is the share of
    the query's idf a memory holds, and the rule score the share of the query's identifiers.
    A channel that cannot speak for a memory is left out of its mean: the rule channel when the
    query holds no identifiers, the keyword channel when the query has no tokens or is written
    in the other language than the memory (so a Chinese query is not penalised for failing to
    share words with an English memory).
    """
    shape = shape or QueryShape()
    languages = languages or {}
    keyword_norm = {h.id: min(1.0, h.score) for h in keyword}
    rule_norm = {h.id: min(1.0, h.score) for h in rule}
    ids = set(vector_similarity) | set(keyword_norm) | set(rule_norm)
    fused = []
    for memory_id in ids:
        scores = ChannelScores(
            vector=max(0.0, vector_similarity.get(memory_id, 0.0)),
            keyword=keyword_norm.get(memory_id, 0.0),
            rule=rule_norm.get(memory_id, 0.0),
        )
        keyword_speaks = shape.keywords and not _crosses_language(shape.language, languages.get(memory_id))
        total = weights.vector + weights.keyword * keyword_speaks + weights.rule * shape.identifiers
        value = weights.vector * scores.vector + weights.keyword * scores.keyword + weights.rule * scores.rule
        score = value / total if total > 0 else 0.0
        fused.append(FusedHit(id=memory_id, score=round(score, 6), channels=scores))
    fused.sort(key=lambda h: (-h.score, str(h.id)))
    return fused


def in_time(fused: list[FusedHit], inside: set[UUID], outside_factor: float) -> list[FusedHit]:
    """The query named a time: memories of other times keep ``outside_factor`` of their score, so
    a memory of that time comes first among equally good matches, and an irrelevant one of that
    time does not jump ahead of a relevant one (a window is evidence, not the answer)."""
    out = [h if h.id in inside else h.model_copy(update={"score": round(h.score * outside_factor, 6)}) for h in fused]
    out.sort(key=lambda h: (-h.score, str(h.id)))
    return out


def prefer_recent(fused: list[FusedHit], times: dict[UUID, datetime], weight: float) -> list[FusedHit]:
    """ "上次", "last time": among the hits, the later a memory happened the larger its bonus
    (up to ``weight``, by rank in time), so the latest of equally good matches comes first."""
    by_time = sorted((h for h in fused if h.id in times), key=lambda h: times[h.id], reverse=True)
    n = len(by_time)
    bonus = {h.id: weight * (1 - i / n) for i, h in enumerate(by_time)}
    out = [h.model_copy(update={"score": round(min(1.0, h.score + bonus.get(h.id, 0.0)), 6)}) for h in fused]
    out.sort(key=lambda h: (-h.score, str(h.id)))
    return out


def add_context(fused: list[FusedHit], links: list[Link], weight: float) -> list[FusedHit]:
    """A memory next to a strong hit in the same conversation is lifted towards it: the answer to
    a question is often the turn after the one that shares its words. score += weight x lift x
    (1 - score), where lift is the best neighbour's score divided by its distance; stays in 0..1."""
    score_of = {h.id: h.score for h in fused}
    lift: dict[UUID, float] = {}
    for link in links:
        lent = score_of.get(link.anchor, 0.0) / link.distance
        lift[link.neighbour] = max(lift.get(link.neighbour, 0.0), lent)
    out = []
    for h in fused:
        context = lift.get(h.id, 0.0)
        score = h.score + weight * context * (1 - h.score)
        channels = h.channels.model_copy(update={"context": round(context, 6)})
        out.append(h.model_copy(update={"score": round(score, 6), "channels": channels}))
    out.sort(key=lambda h: (-h.score, str(h.id)))
    return out
