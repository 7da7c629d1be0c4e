import uuid
from datetime import UTC, datetime

from engram.domain.search import (
    ChannelHit,
    ChannelScores,
    FusedHit,
    Link,
    QueryShape,
    Weights,
    add_context,
    fuse,
    in_time,
    prefer_recent,
)

W = Weights(vector=0.5, keyword=0.3, rule=0.2)


def ids(n):
    return [uuid.uuid4() for _ in range(n)]


def test_weighted_sum_of_normalised_scores():
    a, b = ids(2)
    fused = fuse(
        {a: 0.8, b: 0.4},
        [ChannelHit(id=b, score=0.9, rank=1), ChannelHit(id=a, score=0.5, rank=2)],
        [ChannelHit(id=b, score=1.0, rank=1)],
        W,
    )
    by_id = {h.id: h for h in fused}
    assert by_id[a].channels.keyword == 0.5  # absolute scale: not stretched to the best hit
    assert by_id[a].score == round(0.5 * 0.8 + 0.3 * 0.5, 6)
    assert by_id[b].score == round(0.5 * 0.4 + 0.3 * 0.9 + 0.2 * 1.0, 6)
    assert [h.id for h in fused] == [b, a]


def test_weights_are_renormalised_and_negative_cosine_clipped():
    a, b = ids(2)
    fused = fuse({a: -0.3, b: 0.6}, [], [], Weights(vector=2, keyword=0, rule=0))
    scores = {h.id: h.score for h in fused}
    assert scores == {a: 0.0, b: 0.6}


def test_keyword_only_candidate_without_similarity_still_ranks():
    a = ids(1)[0]
    fused = fuse({}, [ChannelHit(id=a, score=1.0, rank=1)], [], W)
    assert fused[0].score == 0.3


def test_cross_language_vector_hit_is_not_drowned_by_a_weak_keyword_match():
    # Rank fusion would put the keyword-only hit first (rank 1 + rank 2); score fusion does not.
    same_language, other_language = ids(2)
    fused = fuse(
        {same_language: 0.2, other_language: 0.9},
        [ChannelHit(id=same_language, score=0.3, rank=1)],
        [],
        W,
    )
    assert fused[0].id == other_language


def test_a_channel_that_cannot_speak_is_left_out_of_the_mean():
    a = ids(1)[0]
    no_identifiers = QueryShape(language="en", keywords=True, identifiers=False)
    [hit] = fuse({a: 0.5}, [ChannelHit(id=a, score=1.0, rank=1)], [], W, no_identifiers)
    assert hit.score == round((0.5 * 0.5 + 0.3 * 1.0) / (0.5 + 0.3), 6)


def test_a_memory_in_the_other_language_is_not_penalised_for_sharing_no_words():
    english, chinese = ids(2)
    shape = QueryShape(language="zh", keywords=True, identifiers=False)
    fused = fuse(
        {english: 0.7, chinese: 0.5},
        [ChannelHit(id=chinese, score=0.2, rank=1)],
        [],
        W,
        shape,
        {english: "en", chinese: "zh"},
    )
    scores = {h.id: h.score for h in fused}
    assert scores[english] == 0.7  # the keyword channel cannot speak across languages
    assert scores[chinese] == round((0.5 * 0.5 + 0.3 * 0.2) / 0.8, 6)
    assert fused[0].id == english


def test_context_lifts_the_neighbours_of_a_strong_hit_within_0_and_1():
    anchor, next_turn, two_away, stranger = ids(4)
    fused = [
        FusedHit(id=anchor, score=0.8, channels=ChannelScores()),
        FusedHit(id=stranger, score=0.3, channels=ChannelScores()),
        FusedHit(id=next_turn, score=0.25, channels=ChannelScores()),
        FusedHit(id=two_away, score=0.25, channels=ChannelScores()),
    ]
    links = [Link(anchor, next_turn, 1), Link(anchor, two_away, 2), Link(next_turn, anchor, 1)]
    lifted = {h.id: h for h in add_context(fused, links, weight=0.5)}
    assert lifted[next_turn].score == round(0.25 + 0.5 * 0.8 * 0.75, 6)
    assert lifted[two_away].score == round(0.25 + 0.5 * 0.4 * 0.75, 6)
    assert lifted[stranger].score == 0.3 and lifted[stranger].channels.context == 0
    assert lifted[anchor].score <= 1 and lifted[next_turn].channels.context == 0.8
    assert [h.id for h in add_context(fused, links, 0.5)][:2] == [anchor, next_turn]


def test_a_named_time_keeps_other_times_behind_without_promoting_the_irrelevant():
    relevant_then, relevant_other_time, irrelevant_then = ids(3)
    fused = [
        FusedHit(id=relevant_other_time, score=0.6, channels=ChannelScores()),
        FusedHit(id=relevant_then, score=0.5, channels=ChannelScores()),
        FusedHit(id=irrelevant_then, score=0.1, channels=ChannelScores()),
    ]
    ranked = in_time(fused, {relevant_then, irrelevant_then}, outside_factor=0.5)
    assert [h.id for h in ranked] == [relevant_then, relevant_other_time, irrelevant_then]


def test_last_time_puts_the_latest_of_equal_matches_first():
    older, newer = ids(2)
    fused = [
        FusedHit(id=older, score=0.5, channels=ChannelScores()),
        FusedHit(id=newer, score=0.5, channels=ChannelScores()),
    ]
    times = {older: datetime(2026, 1, 1, tzinfo=UTC), newer: datetime(2026, 6, 1, tzinfo=UTC)}
    assert [h.id for h in prefer_recent(fused, times, 0.1)] == [newer, older]
