"""Search request/response types and the pure weighted fusion of channel scores."""

from __future__ import annotations

from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from engram.domain.models import Layer, Memory, MemoryFilter


class Channel(StrEnum):
    vector = "vector"
    keyword = "keyword"
    rule = "rule"


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


class Explanation(BaseModel):
    """Everything needed to see why a memory was (not) found."""

    weights: Weights
    query_tokens: list[str]
    token_idf: dict[str, float] = Field(description="weight of each query token in the keyword channel")
    query_identifiers: list[str]
    candidates: dict[Channel, list[ChannelHit]]
    fused: list[FusedHit]


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4000)
    top_k: int | None = Field(None, ge=1, description="default 5, capped by the server")
    filter: MemoryFilter = Field(default_factory=MemoryFilter)
    explain: bool = False


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


def fuse(
    vector_similarity: dict[UUID, float],
    keyword: list[ChannelHit],
    rule: list[ChannelHit],
    weights: Weights,
) -> list[FusedHit]:
    """Weighted sum of per-channel scores, each on an absolute 0..1 scale, best first.

    Scores, not ranks, are fused: plain reciprocal-rank fusion lets keyword hits (which only
    come from the query's own language) drown cross-language vector hits. The vector score is
    the cosine similarity itself (known for every candidate), the keyword score is the share of
    the query's idf a memory holds, and the rule score the share of the query's identifiers.
    """
    total = weights.vector + weights.keyword + weights.rule
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
        value = (weights.vector * scores.vector + weights.keyword * scores.keyword + weights.rule * scores.rule) / total
        fused.append(FusedHit(id=memory_id, score=round(value, 6), channels=scores))
    fused.sort(key=lambda h: (-h.score, str(h.id)))
    return fused
