"""Ranking metrics with binary relevance (pure)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

CUTOFFS = (5, 10)


def recall_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold)


def ndcg_at(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    gains = sum(1 / math.log2(i + 2) for i, item in enumerate(ranked[:k]) if item in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return gains / ideal


def reciprocal_rank(ranked: Sequence[str], gold: frozenset[str]) -> float:
    return next((1 / (i + 1) for i, item in enumerate(ranked) if item in gold), 0.0)


@dataclass(frozen=True)
class Scores:
    questions: int
    recall_5: float
    recall_10: float
    ndcg_10: float
    mrr: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "questions": self.questions,
            "recall@5": round(self.recall_5, 4),
            "recall@10": round(self.recall_10, 4),
            "ndcg@10": round(self.ndcg_10, 4),
            "mrr": round(self.mrr, 4),
        }


def score(rankings: Sequence[tuple[Sequence[str], frozenset[str]]]) -> Scores:
    n = len(rankings)
    if n == 0:
        return Scores(0, 0.0, 0.0, 0.0, 0.0)
    return Scores(
        n,
        sum(recall_at(r, g, 5) for r, g in rankings) / n,
        sum(recall_at(r, g, 10) for r, g in rankings) / n,
        sum(ndcg_at(r, g, 10) for r, g in rankings) / n,
        sum(reciprocal_rank(r, g) for r, g in rankings) / n,
    )


def by_category(rankings: Sequence[tuple[str, Sequence[str], frozenset[str]]]) -> dict[str, Scores]:
    """Scores overall ("all") and for each category."""
    groups: dict[str, list[tuple[Sequence[str], frozenset[str]]]] = defaultdict(list)
    for category, ranked, gold in rankings:
        groups["all"].append((ranked, gold))
        if category != "all":
            groups[category].append((ranked, gold))
    return {name: score(items) for name, items in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0]))}
