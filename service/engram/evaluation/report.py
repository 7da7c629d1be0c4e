"""Evaluation results as JSON and as Markdown tables."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from engram.evaluation.runner import FULL, PARTS, Run

# Metrics on which the shipped system must be at least as good as each of its parts.
CHECKED = {"recall@10": lambda s: s.recall_10, "NDCG@10": lambda s: s.ndcg_10}


@dataclass(frozen=True)
class PartsCheck:
    """The shipped system against its best part, on one set and one metric."""

    benchmark: str
    metric: str
    shipped: float
    best_part: str
    best: float

    @property
    def holds(self) -> bool:
        return self.shipped >= self.best - 1e-9


# Kinds of question a user asks that a benchmark's average can hide: (set, category) -> line.
ROBUSTNESS = {
    ("paraphrase", "en"): "reworded questions, English",
    ("paraphrase", "zh"): "reworded questions, Chinese",
    ("crosslingual", "zh->en"): "Chinese questions over English memories",
    ("crosslingual", "en->zh"): "English questions over Chinese memories",
    ("longhistory", "all"): "long histories, generated (500+ turns per user)",
    ("longreplies", "all"): "long histories with an assistant's long replies",
    ("locomo", "all"): "long histories, LoCoMo (~600 turns per conversation)",
}


def _checks(run: Run, category: str, label: str) -> list[PartsCheck]:
    parts = [p for p in PARTS if category in run.scores.get(p, {})]
    if category not in run.scores.get(FULL.name, {}) or not parts:
        return []
    checks = []
    for metric, value in CHECKED.items():
        best = max(parts, key=lambda p: value(run.scores[p][category]))
        shipped = value(run.scores[FULL.name][category])
        checks.append(PartsCheck(label, metric, shipped, best, value(run.scores[best][category])))
    return checks


def parts_checks(runs: list[Run]) -> list[PartsCheck]:
    """For every set scored with the shipped system and at least one part."""
    return [check for run in runs for check in _checks(run, "all", run.corpus)]


def robustness_checks(runs: list[Run]) -> list[PartsCheck]:
    """The same comparison on each kind of question of ROBUSTNESS that the runs hold."""
    by_corpus = {run.corpus: run for run in runs}
    return [
        check
        for (corpus, category), label in ROBUSTNESS.items()
        if corpus in by_corpus
        for check in _checks(by_corpus[corpus], category, label)
    ]


def as_json(runs: list[Run], settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "settings": settings,
        "runs": [
            {
                "benchmark": run.corpus,
                "split": run.split,
                "memories": run.memories,
                "write_seconds": round(run.write_seconds, 2),
                "retrieval_seconds": round(run.retrieval_seconds, 2),
                "search_ms": {k: round(v, 2) for k, v in run.search_ms.items()},
                "written": asdict(run.written),
                "scores": {system: {c: s.as_dict() for c, s in cats.items()} for system, cats in run.scores.items()},
            }
            for run in runs
        ],
        "never_worse_than_a_part": [asdict(c) | {"holds": c.holds} for c in parts_checks(runs)],
        "robustness": [asdict(c) | {"holds": c.holds} for c in robustness_checks(runs)],
    }


def as_markdown(runs: list[Run]) -> str:
    out: list[str] = []
    for run in runs:
        questions = next(iter(run.scores.values()))["all"].questions
        w = run.written
        out.append(
            f"### {run.corpus}, {run.split} split: {questions} questions, {run.memories} memories "
            f"written in {run.write_seconds:.1f} s\n"
        )
        out.append(
            f"Written: {w.superseded} superseded, {w.marked} marked; of {w.answers} memories holding an answer, "
            f"{w.answers_retired} retired and {w.answers_marked} marked before any question was asked.\n"
        )
        out.append("| system | recall@5 | recall@10 | NDCG@10 | MRR | ms/query |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for system, cats in run.scores.items():
            s = cats["all"]
            ms = f"{run.search_ms[system]:.1f}" if system in run.search_ms else "-"
            out.append(f"| {system} | {s.recall_5:.3f} | {s.recall_10:.3f} | {s.ndcg_10:.3f} | {s.mrr:.3f} | {ms} |")
        categories = [c for c in next(iter(run.scores.values())) if c != "all"]
        if categories:
            systems = list(run.scores)
            out.append("\nrecall@10 / NDCG@10 per category:\n")
            out.append("| category | n | " + " | ".join(systems) + " |")
            out.append("|---|---:|" + "---:|" * len(systems))
            for category in categories:
                cells = [
                    f"{run.scores[s][category].recall_10:.3f} / {run.scores[s][category].ndcg_10:.3f}" for s in systems
                ]
                n = run.scores[systems[0]][category].questions
                out.append(f"| {category} | {n} | " + " | ".join(cells) + " |")
        out.append("")
    for title, checks in (("Never worse than a part", parts_checks(runs)), ("Robustness", robustness_checks(runs))):
        if checks:
            out.extend(_checks_table(title, checks))
    return "\n".join(out)


def _checks_table(title: str, checks: list[PartsCheck]) -> list[str]:
    out = [f"### {title}\n", "| set | metric | engram | best part | its score | |", "|---|---|---:|---|---:|---|"]
    for c in checks:
        mark = "holds" if c.holds else "**FAILS**"
        out.append(f"| {c.benchmark} | {c.metric} | {c.shipped:.3f} | {c.best_part} | {c.best:.3f} | {mark} |")
    return [*out, ""]


def failed_parts(runs: list[Run]) -> list[str]:
    """One line per set (or kind of question) and metric where a part beats the shipped system."""
    return [
        f"{c.benchmark}: {c.metric} {c.shipped:.3f} < {c.best_part} {c.best:.3f}"
        for c in [*parts_checks(runs), *robustness_checks(runs)]
        if not c.holds
    ]
