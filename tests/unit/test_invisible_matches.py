"""Invisible characters (control, zero-width, the other default-ignorable ones) never make two
texts one fact on their own: a text of nothing visible is the same as nothing, and two texts of
no word are the same only if a reader sees the same text."""

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.domain.boundary import readable, visible
from engram.domain.dedup import Thresholds
from engram.domain.judgement import ForgetVerdict, MergeVerdict, Relation, Turn, TurnJudgement
from engram.domain.models import Memory
from engram.domain.relations import relate_statements
from engram.judge.base import Judge
from engram.judge.rules import RuleJudge
from engram.services.dedup import relate_all

THRESHOLDS = Thresholds(touch=0.81, judge=0.52)
HIDDEN = st.sampled_from(
    ["\u200b", "\u200c", "\u200d", "\ufeff", "\u2060", "\x01", "\x7f", "\x9f", "\u00ad", "\u3164", "\u034f", "\ufe0f",
     "\U000e0001", " ", "\t", "\u2800"]
)  # fmt: skip
INVISIBLE_TEXTS = st.lists(HIDDEN, min_size=1, max_size=8).map("".join)
WORDLESS = st.sampled_from(["a", ".", "!", "👍", "👎", "I like it", "I love it", "ok", "it", "喜欢", "...", "?!"])
TEXTS = (
    INVISIBLE_TEXTS
    | WORDLESS
    | st.sampled_from(["The user likes green tea", "The user lives in Paris", "用户喜欢茶"])
    | st.builds(lambda a, b: a + b, WORDLESS, INVISIBLE_TEXTS)
)


def related(new: str, existing: str, similarity: float = 1.0) -> Relation:
    verdicts = asyncio.run(relate_all(new, [(existing, similarity, True)], THRESHOLDS, RuleJudge()))
    return verdicts[0].relation


@settings(deadline=None)  # the first Chinese text loads the segmenter
@given(TEXTS, INVISIBLE_TEXTS)
def test_a_stored_text_of_nothing_visible_is_no_fact_of_any_new_one(new, stored):
    """Such memories were stored before invisible content was refused: they embed alike (cosine
    1.0 with the bundled model), and no new text may be counted as their mention."""
    assert related(new, stored) == Relation.different
    assert related(stored, new) == Relation.different


PAIRS = [("a\u200b", "\u200b"), (".", "\u3164"), ("The\u200b user", "\ufeff"), ("\u034f", "\u3164"), ("likes", "\x01")]


@pytest.mark.parametrize(("new", "stored"), PAIRS)
def test_nothing_visible_is_never_the_same(new, stored):
    assert related(new, stored) == Relation.different
    assert relate_statements(new, stored).relation == Relation.different  # the rules, asked directly


class SaysSame(Judge):
    """A judge that finds every pair the same fact (an LLM may, of two texts it cannot read)."""

    name = "says-same"

    async def judge_turn(self, turn: Turn) -> TurnJudgement:
        raise NotImplementedError

    async def relate(self, new: str, existing: str, similarity: float) -> MergeVerdict:
        return MergeVerdict(relation=Relation.same, reason="looks the same")

    async def confirm_forget(self, memory: Memory, score: float) -> ForgetVerdict:
        raise NotImplementedError

    async def derive(self, memories: list[Memory]) -> str | None:
        return None


@pytest.mark.parametrize(("new", "stored"), PAIRS)
async def test_no_judge_is_asked_about_a_text_of_nothing_visible(new, stored):
    [verdict] = await relate_all(new, [(stored, 1.0, True)], THRESHOLDS, SaysSame())
    assert verdict.relation == Relation.different
    [verdict] = await relate_all(
        "The user likes tea", [("The user likes tea\u200b", 1.0, True)], THRESHOLDS, SaysSame()
    )
    assert verdict.relation == Relation.same  # what can be seen is still the judge's to relate


@settings(deadline=None)
@given(WORDLESS, WORDLESS, INVISIBLE_TEXTS, INVISIBLE_TEXTS)
def test_two_texts_of_no_word_are_one_only_if_they_read_alike(a, b, hide_a, hide_b):
    relation = relate_statements(a + hide_a, hide_b + b).relation
    if normalise_visible(a) != normalise_visible(b):
        assert relation != Relation.same, (a, b)


def normalise_visible(text: str) -> str:
    return visible(text).strip().casefold()


@pytest.mark.parametrize(
    ("new", "stored", "relation"),
    [
        ("a", ".", Relation.different),  # the lack of words is nothing in common
        ("!", ".", Relation.different),
        ("👍", "👎", Relation.different),
        ("I like it", "I love it", Relation.different),
        ("The user likes green tea\u200b", "The user likes green tea", Relation.same),  # the words are the same
        ("The user likes green\u2060 tea", "The user likes green tea", Relation.same),
        ("I like it!", "I like it", Relation.same),
        (".\u200b", "\u200b!", Relation.different),  # the zero-width spaces alone read alike
        ("The user likes gre\u200ben tea", "The user likes green tea", Relation.same),  # nor split a word
    ],
)
def test_statements_relate_by_what_a_reader_sees(new, stored, relation):
    assert relate_statements(new, stored).relation == relation


def test_readable_and_visible_agree():
    for text in ["\u200b", "a\u200b", "\u3164x", "\U000e0001"]:
        assert readable(text) == bool(visible(text).strip())
