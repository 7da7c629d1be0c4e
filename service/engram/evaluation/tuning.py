"""Grid search over fusion weights and candidate sizes, scored by NDCG@10 (pure but for the run)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from engram.evaluation.runner import Run, System

GRID = {
    "vector_weight": (0.2, 0.3),
    "keyword_weight": (0.3, 0.4, 0.5),
}


def grid_systems(grid: dict[str, tuple] = GRID) -> list[System]:
    keys = list(grid)
    systems = []
    for values in itertools.product(*(grid[k] for k in keys)):
        overrides = dict(zip(keys, values, strict=True))
        name = " ".join(f"{k.removesuffix('_weight')}={v}" for k, v in overrides.items())
        systems.append(System(name, overrides))
    return systems


@dataclass(frozen=True)
class Ranked:
    system: System
    ndcg: dict[str, float]  # benchmark -> NDCG@10

    @property
    def mean(self) -> float:
        return sum(self.ndcg.values()) / len(self.ndcg)


def rank_settings(runs: list[Run], systems: list[System]) -> list[Ranked]:
    """Settings best first by NDCG@10 averaged over the benchmarks (each counts once)."""
    ranked = [Ranked(s, {run.corpus: run.scores[s.name]["all"].ndcg_10 for run in runs}) for s in systems]
    return sorted(ranked, key=lambda r: -r.mean)


def as_markdown(ranked: list[Ranked]) -> str:
    corpora = list(ranked[0].ndcg) if ranked else []
    lines = ["| setting | " + " | ".join(corpora) + " | mean NDCG@10 |", "|---|" + "---:|" * (len(corpora) + 1)]
    for r in ranked:
        cells = " | ".join(f"{r.ndcg[c]:.3f}" for c in corpora)
        lines.append(f"| {r.system.name} | {cells} | {r.mean:.3f} |")
    return "\n".join(lines)
