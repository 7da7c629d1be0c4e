"""`engram eval`: retrieval quality on LoCoMo and MADial-Bench, written as JSON and Markdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from engram.cli.common import app, command, with_engram
from engram.cli.progress import progress
from engram.evaluation import datasets, lifecycle, report, tuning
from engram.evaluation.runner import CHANNELS_ALONE, FULL, Run, evaluate
from engram.runtime import Engram
from engram.settings import Settings


@app.command("eval")
@command
def eval_command(
    benchmark: Annotated[
        list[str] | None,
        typer.Option("--benchmark", "-b", help=f"{', '.join([*datasets.LOADERS, *datasets.OWN])} (default: all)"),
    ] = None,
    split: Annotated[str, typer.Option(help="dev (tune on it), test (held out) or all")] = "test",
    data_dir: Annotated[Path, typer.Option(help="where the public benchmarks are")] = Path("../shared/data"),
    own_data: Annotated[Path, typer.Option(help="where engram's own sets are")] = Path("tests/data"),
    out: Annotated[Path, typer.Option(help="folder for results.json and results.md")] = Path(".state/eval"),
    channels: Annotated[bool, typer.Option(help="also score each channel alone and BM25")] = True,
    grid: Annotated[bool, typer.Option(help="grid-search fusion weights and candidates (use --split dev)")] = False,
    lifecycle_set: Annotated[
        bool,
        typer.Option(
            "--lifecycle",
            help="instead: labelled write sequences (--set), split calibration|heldout|all",
        ),
    ] = False,
    labelled_set: Annotated[
        str, typer.Option("--set", help=f"with --lifecycle: {', '.join(lifecycle.SETS)}")
    ] = "lifecycle",
) -> None:
    """Write each benchmark through the real write path into throwaway tenants, search every
    question through the real search path, print recall@5/10, NDCG@10 and MRR. With --lifecycle:
    write labelled sequences of statements and score what stays active (stale, lost, duplicates)."""
    settings = Settings()
    if lifecycle_set:
        _lifecycle(settings, own_data, labelled_set, {"dev": "calibration", "test": "heldout"}.get(split, split), out)
        return
    names = benchmark or [*datasets.LOADERS, *datasets.OWN]
    if not benchmark and not data_dir.is_dir():  # a fresh clone: what runs without them
        names = [n for n in names if not datasets.needs_public_data(n)]
        typer.secho(
            f"no public benchmarks at {data_dir} (LoCoMo, MADial-Bench; --data-dir to point at them): "
            f"running engram's own sets ({', '.join(names)})",
            err=True,
        )
    corpora = [datasets.load(name, data_dir, own_data).select(split) for name in names]
    systems = tuning.grid_systems() if grid else [FULL, *(CHANNELS_ALONE if channels else [])]

    groups = sum(len(c.groups) for c in corpora)
    with progress("evaluating") as update:
        started = iter(range(1, groups + 1))

        async def run(engram: Engram) -> list[Run]:
            report = lambda line: update(next(started), groups, line)  # noqa: E731
            baseline = channels and not grid
            return [await evaluate(engram, c, split, systems, baseline=baseline, progress=report) for c in corpora]

        runs = with_engram(settings, run)
    out.mkdir(parents=True, exist_ok=True)
    if grid:
        ranked = tuning.rank_settings(runs, systems)
        table = tuning.as_markdown(ranked)
        (out / "grid.md").write_text(table + "\n")
        typer.echo(table)
        typer.echo(f"\nbest on the {split} split: {ranked[0].system.name} (mean NDCG@10 {ranked[0].mean:.3f})")
        return
    used = settings.retrieval.model_dump() | {"embedding_model": settings.embedding_model}
    (out / "results.json").write_text(json.dumps(report.as_json(runs, used), indent=2))
    markdown = report.as_markdown(runs)
    (out / "results.md").write_text(markdown)
    typer.echo(markdown)
    for failure in report.failed_parts(runs):
        typer.secho(f"worse than a part: {failure}", fg=typer.colors.YELLOW, err=True)


def _lifecycle(settings: Settings, own_data: Path, name: str, split: str, out: Path) -> None:
    cases = lifecycle.select(lifecycle.load_set(own_data, name), split)

    async def run(engram: Engram) -> list[lifecycle.Outcome]:
        return await lifecycle.evaluate_cases(engram, cases, progress=lambda line: typer.echo(line, err=True))

    outcomes = with_engram(settings, run)
    judge = f"LLM judge ({settings.llm.model})" if settings.llm.model else "rule judge"
    markdown = lifecycle.as_markdown(outcomes, f"{name}, {split} split, {judge}")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}-{split}.md").write_text(markdown + "\n")
    typer.echo(markdown)
