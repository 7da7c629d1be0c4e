"""Evaluation results as JSON and as Markdown tables."""

from __future__ import annotations

from typing import Any

from engram.evaluation.runner import Run


def as_json(runs: list[Run], settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "settings": settings,
        "runs": [
            {
                "benchmark": run.corpus,
                "split": run.split,
                "memories": run.memories,
                "write_seconds": round(run.write_seconds, 2),
                "search_ms": {k: round(v, 2) for k, v in run.search_ms.items()},
                "scores": {system: {c: s.as_dict() for c, s in cats.items()} for system, cats in run.scores.items()},
            }
            for run in runs
        ],
    }


def as_markdown(runs: list[Run]) -> str:
    out: list[str] = []
    for run in runs:
        questions = next(iter(run.scores.values()))["all"].questions
        out.append(
            f"### {run.corpus}, {run.split} split: {questions} questions, {run.memories} memories "
            f"written in {run.write_seconds:.1f} s\n"
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
    return "\n".join(out)
