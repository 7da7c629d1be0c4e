"""Calibrate near-duplicate thresholds for an embedding model over a labelled pair set.

Each pair is (existing, new, label) with label same | supplement | conflict | different. The
merge decision (touch or merge into the existing memory) is right for same/supplement and wrong
for conflict/different. Thresholds are chosen on a grid: the judge threshold keeps 90% of the
related pairs (same, supplement, conflict) in view of the judge; the touch threshold is the
lowest that keeps merge precision at 0.95 or more.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from engram.domain.dedup import Thresholds
from engram.domain.judgement import Relation
from engram.domain.lifecycle import numbers_of
from engram.embedding import Embedder
from engram.judge.rules import RuleJudge
from engram.services.dedup import relate

MERGING = {Relation.same, Relation.supplement}
RELATED = {Relation.same, Relation.supplement, Relation.conflict}
_FILE = "thresholds.json"


@dataclass(frozen=True)
class Pair:
    existing: str
    new: str
    label: Relation
    kind: str


@dataclass
class Report:
    thresholds: Thresholds
    precision: float
    recall: float
    pairs: int
    numeric_near_misses_merged: int
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [
            f"pairs: {self.pairs}   touch threshold {self.thresholds.touch:.2f}   "
            f"judge threshold {self.thresholds.judge:.2f}",
            f"merge decision (rules judge): precision {self.precision:.3f}   recall {self.recall:.3f}",
            f"near-misses with different numbers merged: {self.numeric_near_misses_merged}",
            "gold \\ decided: " + "  ".join(r.value for r in Relation),
        ]
        for gold, row in self.confusion.items():
            out.append(f"  {gold:10} " + "  ".join(f"{row.get(r.value, 0):>{len(r.value)}}" for r in Relation))
        return out


def load_pairs(path: Path) -> list[Pair]:
    pairs = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(Pair(row["existing"], row["new"], Relation(row["label"]), row.get("kind", "")))
    return pairs


# Pairs embedded per call: small enough to report progress often, large enough to batch well.
EMBED_CHUNK = 64
Progress = Callable[[int, int], None]  # (done, total)


def _silent(done: int, total: int) -> None:
    pass


async def similarities(embedder: Embedder, pairs: list[Pair], progress: Progress = _silent) -> list[float]:
    sims: list[float] = []
    for start in range(0, len(pairs), EMBED_CHUNK):
        chunk = pairs[start : start + EMBED_CHUNK]
        vectors = await embedder.embed_documents([p.existing for p in chunk] + [p.new for p in chunk])
        a, b = vectors[: len(chunk)], vectors[len(chunk) :]
        sims.extend(float(np.dot(x, y)) for x, y in zip(a, b, strict=True))
        progress(len(sims), len(pairs))
    return sims


async def evaluate(pairs: list[Pair], sims: list[float], thresholds: Thresholds) -> Report:
    """The write path's decision (services/dedup.py) with the rules judge, against the labels."""
    judge = RuleJudge()
    decided = [
        (await relate(p.new, p.existing, s, thresholds, judge)).relation for p, s in zip(pairs, sims, strict=True)
    ]
    merged = [d in MERGING for d in decided]
    should = [p.label in MERGING for p in pairs]
    true_pos = sum(m and s for m, s in zip(merged, should, strict=True))
    confusion: dict[str, dict[str, int]] = {}
    for pair, relation in zip(pairs, decided, strict=True):
        row = confusion.setdefault(pair.label.value, {})
        row[relation.value] = row.get(relation.value, 0) + 1
    near_misses = sum(m for p, m in zip(pairs, merged, strict=True) if numbers_of(p.existing) != numbers_of(p.new))
    return Report(
        thresholds=thresholds,
        precision=true_pos / max(1, sum(merged)),
        recall=true_pos / max(1, sum(should)),
        pairs=len(pairs),
        numeric_near_misses_merged=near_misses,
        confusion=confusion,
    )


async def choose(pairs: list[Pair], sims: list[float], progress: Progress = _silent) -> Thresholds:
    related = sorted(s for p, s in zip(pairs, sims, strict=True) if p.label in RELATED)
    judge = round(max(0.3, related[int(0.1 * len(related))] if related else 0.5) - 0.005, 2)
    best: tuple[float, float] | None = None  # (f1, touch)
    steps = range(int(judge * 100), 100)
    for done, step in enumerate(steps, 1):
        progress(done, len(steps))
        touch = step / 100
        report = await evaluate(pairs, sims, Thresholds(touch=touch, judge=judge))
        if report.precision < 0.95:
            continue
        f1 = 2 * report.precision * report.recall / max(1e-9, report.precision + report.recall)
        if best is None or f1 > best[0]:
            best = (f1, touch)
    return Thresholds(touch=best[1] if best else 0.99, judge=judge)


def shipped_thresholds() -> dict[str, Thresholds]:
    raw = json.loads((resources.files("engram.data") / _FILE).read_text())
    return {model: Thresholds.model_validate(value) for model, value in raw.items()}


def save_thresholds(model: str, thresholds: Thresholds) -> Path:
    path = Path(str(resources.files("engram.data") / _FILE))
    raw = json.loads(path.read_text())
    # noise and wide are measured apart (docs/lifecycle.md), not by this pair set
    raw[model] = {**raw.get(model, {}), **thresholds.model_dump(exclude={"noise", "wide"})}
    path.write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n")
    return path
