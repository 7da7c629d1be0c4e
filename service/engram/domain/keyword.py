"""IDF weighting for the keyword channel.

A memory's keyword score is the share of the query's information it contains:
sum of idf over the query tokens it holds / sum of idf over all query tokens. So a match on a
word most memories share ("用户", "user") counts for little, an absolute scale (0..1) lets the
score be fused with cosine similarity, and a query whose rare words match nothing gets no
inflated keyword score (which would drown cross-language vector hits).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engram.domain.tokenize import to_tsquery_literal

# Tokens in more documents than this are not used to find candidates (they still weigh in the
# denominator): it bounds the work of a query like "user" in a tenant of a million memories.
MAX_MATCHING_DOCUMENTS = 5000


def idf(documents: int, frequency: int) -> float:
    """BM25's idf: never negative, highest for a token no memory contains."""
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


@dataclass(frozen=True)
class KeywordQuery:
    tokens: list[str]
    weights: list[float]
    tsquery: str | None  # the tokens worth matching on, OR-ed

    @property
    def total_weight(self) -> float:
        return sum(self.weights)

    @classmethod
    def build(cls, tokens: list[str], documents: int, frequencies: list[int]) -> KeywordQuery:
        weights = [idf(documents, df) for df in frequencies]
        matchable = [t for t, df in zip(tokens, frequencies, strict=True) if 0 < df <= MAX_MATCHING_DOCUMENTS]
        return cls(tokens=tokens, weights=weights, tsquery=to_tsquery_literal(matchable))
