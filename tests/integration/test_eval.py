"""`engram eval`'s machinery on a tiny corpus made here (the benchmarks themselves live outside the
repository; their loaders are checked when ../shared/data is present)."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.evaluation import datasets, report
from engram.evaluation.datasets import EvalCorpus, EvalGroup, EvalMemory, EvalQuestion
from engram.evaluation.metrics import Scores, ndcg_at, recall_at, reciprocal_rank
from engram.evaluation.runner import BM25, CHANNELS_ALONE, FULL, Run, evaluate

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def corpus() -> EvalCorpus:
    when = datetime(2024, 5, 1, tzinfo=UTC)
    memories = [
        EvalMemory("m1", "Dana: I adopted a corgi named Biscuit last spring", when, conversation="c/1"),
        EvalMemory("m2", "Eli: Cute! How is he settling in?", when, conversation="c/1"),
        EvalMemory("m3", "Dana: He loves the beach and chasing seagulls", when, conversation="c/1"),
        EvalMemory("m4", "Eli: I started learning the violin this year", when, conversation="c/2"),
        EvalMemory("m5", "用户喜欢喝美式咖啡", when),
    ]
    questions = [
        EvalQuestion("q1", "What is the name of Dana's dog?", frozenset({"m1"}), "single-hop"),
        EvalQuestion("q2", "Where does Dana's corgi like to go?", frozenset({"m3"}), "multi-hop"),
        EvalQuestion("q3", "Which instrument is Eli learning?", frozenset({"m4"}), "single-hop"),
        EvalQuestion("q4", "用户喜欢什么咖啡", frozenset({"m5"}), "single-hop"),
    ]
    return EvalCorpus("tiny", "en", [EvalGroup("g", memories, questions)])


def test_metrics_on_a_known_ranking():
    gold = frozenset({"a", "c"})
    assert recall_at(["a", "b", "c"], gold, 2) == 0.5 and recall_at(["a", "b", "c"], gold, 5) == 1.0
    assert reciprocal_rank(["b", "c"], gold) == 0.5
    assert ndcg_at(["a", "c"], gold, 10) == 1.0 and 0 < ndcg_at(["b", "a", "c"], gold, 10) < 1


async def test_a_run_scores_every_system_and_cleans_up(engram):
    before = {t.name for t in await engram.tenants.list()}
    run = await evaluate(engram, corpus(), "all", [FULL, *CHANNELS_ALONE])
    assert set(run.scores) == {FULL.name, *(s.name for s in CHANNELS_ALONE), BM25}
    full = run.scores[FULL.name]
    assert full["all"].questions == 4 and set(full) == {"all", "multi-hop", "single-hop"}
    assert full["all"].recall_10 == 1.0 and full["all"].mrr >= 0.75
    assert {t.name for t in await engram.tenants.list()} == before  # the throwaway tenant is gone
    markdown = report.as_markdown([run])
    assert "| engram |" in markdown and "multi-hop" in markdown and "Never worse than a part" in markdown
    assert report.as_json([run], {})["runs"][0]["scores"][FULL.name]["all"]["questions"] == 4


def scores(**by_category: tuple[float, float]) -> dict[str, Scores]:
    """Ten questions per category, scored (recall, NDCG): recall@5 = recall@10, MRR = NDCG."""
    return {c: Scores(10, r, r, n, n) for c, (r, n) in by_category.items()}


def test_a_set_where_a_part_beats_the_hybrid_is_flagged():
    run = Run(
        corpus="long-history",
        split="test",
        scores={
            FULL.name: scores(all=(0.75, 0.60)),
            "vector only": scores(all=(0.86, 0.55)),
            BM25: scores(all=(0.82, 0.62)),
        },
        write_seconds=1.0,
        memories=500,
        search_ms={},
    )
    assert report.failed_parts([run]) == [
        "long-history: recall@10 0.750 < vector only 0.860",
        "long-history: NDCG@10 0.600 < bm25 (baseline) 0.620",
    ]
    tie = Run("tie", "test", {FULL.name: scores(all=(0.5, 0.5)), "keyword only": scores(all=(0.5, 0.5))}, 1.0, 5, {})
    assert report.failed_parts([tie]) == [] and "| tie | recall@10 | 0.500 | keyword only | 0.500 | holds |" in (
        report.as_markdown([tie])
    )
    assert [c["holds"] for c in report.as_json([run], {})["never_worse_than_a_part"]] == [False, False]


def test_each_kind_of_question_gets_its_own_line_and_a_flag_where_a_part_wins():
    run = Run(
        corpus="paraphrase",
        split="test",
        scores={
            FULL.name: scores(all=(0.9, 0.8), en=(0.9, 0.8), zh=(0.7, 0.6)),
            "vector only": scores(all=(0.8, 0.7), en=(0.8, 0.7), zh=(0.8, 0.7)),
        },
        write_seconds=1.0,
        memories=60,
        search_ms={},
    )
    assert report.failed_parts([run]) == [
        "reworded questions, Chinese: recall@10 0.700 < vector only 0.800",
        "reworded questions, Chinese: NDCG@10 0.600 < vector only 0.700",
    ]
    markdown = report.as_markdown([run])
    assert "### Robustness" in markdown and "| reworded questions, English | recall@10 | 0.900 |" in markdown
    assert [c["benchmark"] for c in report.as_json([run], {})["robustness"]] == [
        "reworded questions, English",
        "reworded questions, English",
        "reworded questions, Chinese",
        "reworded questions, Chinese",
    ]


@pytest.mark.skipif(not DATA.is_dir(), reason="the benchmarks are not at ../shared/data")
def test_the_benchmark_loaders_read_the_shared_data():
    locomo = datasets.load("locomo", DATA)
    assert len(locomo.groups) == 10 and locomo.questions > 1500
    assert locomo.select("dev").questions + locomo.select("test").questions == locomo.questions
    plain = datasets.load("locomo-plain", DATA)
    assert plain.questions == locomo.questions
    assert not any(m.conversation or m.occurred_at for g in plain.groups for m in g.memories)
    for name in ("madial-zh", "madial-en"):
        madial = datasets.load(name, DATA)
        assert madial.questions == 160 and all(q.gold for g in madial.groups for q in g.questions)
