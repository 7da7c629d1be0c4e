"""IDF weighting for the keyword channel.

A memory's keyword score is the share of the query's information it contains:
sum of idf over the query tokens it holds / sum of idf over all query tokens. The idf is the
Robertson-Spärck Jones weight, clamped at 0: a word that half the memories or more contain
("用户", "user", a speaker's name in a transcript) is no evidence at all, so sharing it lifts no
memory above one written in the other language. An absolute scale (0..1) lets the score be fused
with the other channels, and a query whose rare words match nothing gets no inflated keyword score.

A long memory holds more of any query's words by chance: an assistant's reply of 3,000 characters
shares a word or two with most questions. Beyond LENGTH_PIVOT distinct tokens (a turn of a few
sentences) a memory keeps (LENGTH_PIVOT / tokens) ^ exponent of its share; shorter ones keep all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from engram.domain.tokenize import to_tsquery_literal

# Candidates are fetched with the rarest tokens until their document frequencies add up to
# this many memories (at least one token is always used). Commoner tokens still count in the
# score of the memories found. It bounds the work of "user" in a tenant of a million memories.
MATCH_BUDGET = 1000
# At most this many matching memories are scored per query (see keyword_candidates).
MATCH_SCAN = 2000
MAX_QUERY_TOKENS = 64
# Distinct tokens up to which a memory's keyword evidence is not discounted for its length.
LENGTH_PIVOT = 48


# A tenant is counted as holding this many more memories, none with the query's words: without
# it a word of the only memory of a new tenant would weigh nothing.
PRIOR_DOCUMENTS = 10


def idf(documents: int, frequency: int) -> float:
    """Robertson-Spärck Jones, clamped at 0: 0 for a token in (about) half the memories or more,
    highest for a token no memory contains."""
    documents += PRIOR_DOCUMENTS
    return max(0.0, math.log((documents - frequency + 0.5) / (frequency + 0.5)))


@dataclass(frozen=True)
class TokenStatistics:
    """Token frequencies as PostgreSQL's ANALYZE sampled them (most common elements of the column)."""

    documents: int
    common: dict[str, float] = field(default_factory=dict)  # token -> share of memories holding it
    floor: float = 0.0  # the smallest share listed; anything unlisted is rarer than this

    def document_frequency(self, token: str) -> int:
        share = self.common.get(token, self.floor / 2)
        return round(share * self.documents)


@dataclass(frozen=True)
class KeywordQuery:
    tokens: list[str]
    weights: list[float]
    match_tokens: list[str]  # the tokens used to find candidates
    length_exponent: float = 0.0  # how much a long memory's share is discounted (0: not at all)

    @property
    def total_weight(self) -> float:
        return sum(self.weights)

    @property
    def tsquery(self) -> str | None:
        return to_tsquery_literal(self.match_tokens)

    @classmethod
    def build(
        cls, tokens: list[str], documents: int, frequencies: list[int], length_exponent: float = 0.0
    ) -> KeywordQuery:
        tokens, frequencies = tokens[:MAX_QUERY_TOKENS], frequencies[:MAX_QUERY_TOKENS]
        weights = [idf(documents, df) for df in frequencies]
        match: list[str] = []
        spent = 0
        informative = [(df, t) for t, df, w in zip(tokens, frequencies, weights, strict=True) if df > 0 and w > 0]
        for df, token in sorted(informative):
            if match and spent + df > MATCH_BUDGET:
                break
            match.append(token)
            spent += df
        return cls(tokens=tokens, weights=weights, match_tokens=match, length_exponent=length_exponent)


def length_factor(tokens: int, exponent: float) -> float:
    """The share of its keyword evidence a memory of ``tokens`` distinct tokens keeps (the same as
    the database computes, store/memories.py keyword_candidates)."""
    return min(1.0, (LENGTH_PIVOT / max(tokens, 1)) ** exponent)
