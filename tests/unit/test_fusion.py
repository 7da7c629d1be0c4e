"""Fusion: the score of a candidate, as explain shows it (engram/domain/fusion.py)."""

import itertools
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from engram.domain.fusion import (
    ChannelHit,
    ChannelScores,
    FusedHit,
    Link,
    Similarity,
    Weights,
    add_context,
    below_newer,
    cut,
    evidence_first,
    fuse,
    has_evidence,
    in_time,
    latest_first,
    prefer_layers,
    relevance,
    score_of,
)

W = Weights(vector=0.5, keyword=0.7, rule=0.9, context=0.5)
unit = st.floats(0, 1, allow_nan=False)
any_score = st.floats(-5, 5, allow_nan=False)
weights = st.builds(Weights, vector=unit, keyword=unit, rule=unit, context=unit)


def ids(n):
    return [uuid.uuid4() for _ in range(n)]


def hit(memory_id, value=1.0):
    return ChannelHit(id=memory_id, score=value, rank=1)


def sims(cosines):
    """Raw and centred cosine alike (a tenant too small to centre)."""
    return {k: Similarity(v, v) for k, v in cosines.items()}


def test_the_channels_combine_as_a_noisy_or():
    a, b = ids(2)
    fused = {h.id: h for h in fuse(sims({a: 0.8, b: 0.4}), [hit(b, 0.9), hit(a, 0.5)], [hit(b)], W)}
    assert fused[a].relevance == round(1 - (1 - 0.5 * 0.8) * (1 - 0.7 * 0.5), 6)
    assert fused[b].relevance == round(1 - (1 - 0.5 * 0.4) * (1 - 0.7 * 0.9) * (1 - 0.9), 6)
    assert fused[a].channels.keyword == 0.5  # absolute scale: not stretched to the best hit


def test_a_memory_sharing_no_words_is_not_pulled_down():
    # A same-language paraphrase sharing no words keeps what its vector evidence gives it.
    paraphrase, sharing = ids(2)
    fused = {h.id: h for h in fuse(sims({paraphrase: 0.6, sharing: 0.6}), [hit(sharing, 0.2)], [], W)}
    assert fused[paraphrase].score == round(0.5 * 0.6, 6)
    assert fused[sharing].score > fused[paraphrase].score


def test_a_memory_the_keyword_channel_cannot_see_is_judged_by_its_vector():
    # A Chinese query, an English translation of the answer: it cannot share the query's words, so
    # its cosine also stands for the keyword channel at even odds; an English memory that shares
    # one word of the query but means less does not pass it.
    translation, sharing = ids(2)
    similarity = sims({translation: 0.6, sharing: 0.2})
    fused = {h.id: h for h in fuse(similarity, [hit(sharing, 0.44)], [], W, other_language={translation})}
    assert fused[translation].other_language and not fused[sharing].other_language
    assert fused[translation].relevance == round((1 - (1 - 0.5) * (1 - 0.7 / 2)) * 0.6, 6)
    assert fused[translation].score > fused[sharing].score


@given(weights, unit)
@example(Weights(vector=0.5, keyword=0.0, rule=0.0, context=0.0), 0.57937946860771)  # two roundings apart
def test_a_memory_holding_every_query_word_never_ranks_below_its_translation(w, cosine):
    same, translation = ids(2)
    similarity = sims({same: cosine, translation: cosine})
    fused = {h.id: h for h in fuse(similarity, [hit(same, 1.0)], [], w, other_language={translation})}
    assert fused[same].score >= fused[translation].score - 1e-6
    # Never below a same-language silence. The score is rounded to 6 digits from channels already
    # rounded to 6 digits: it may sit up to 1e-6 (and a float's error) under the once-rounded figure.
    assert fused[translation].score >= round(w.vector * cosine, 6) - 2e-6


def test_one_strong_channel_is_enough():
    order, chatter = ids(2)
    fused = fuse(sims({order: 0.1, chatter: 0.5}), [], [hit(order)], W)
    assert fused[0].id == order and fused[0].score >= 0.9


def test_negative_cosine_counts_as_no_evidence():
    a = ids(1)[0]
    [h] = fuse(sims({a: -0.3}), [], [], W)
    assert h.score == 0 and h.channels.vector == 0


def test_context_lends_a_neighbour_relevance_divided_by_distance():
    anchor, next_turn, two_away, stranger = ids(4)
    fused = fuse(sims({anchor: 0.9, next_turn: 0.2, two_away: 0.2, stranger: 0.3}), [hit(anchor)], [], W)
    links = [Link(anchor, next_turn, 1), Link(anchor, two_away, 2), Link(next_turn, anchor, 1)]
    lifted = {h.id: h for h in add_context(fused, links, W)}
    anchor_relevance = next(h.relevance for h in fused if h.id == anchor)
    assert lifted[next_turn].channels.context == round(anchor_relevance, 6)
    assert lifted[two_away].channels.context == round(anchor_relevance / 2, 6)
    assert lifted[stranger].channels.context == 0
    assert lifted[next_turn].score > lifted[stranger].score > 0
    # Lent from the anchor's own channels: context does not echo back to the anchor.
    assert lifted[anchor].channels.context < lifted[anchor].relevance


def test_a_named_time_keeps_other_times_behind_without_promoting_the_irrelevant():
    relevant_then, relevant_other_time, irrelevant_then = ids(3)
    fused = fuse(sims({relevant_then: 0.6, relevant_other_time: 0.7, irrelevant_then: 0.1}), [], [], W)
    ranked = in_time(fused, {relevant_then, irrelevant_then}, 0.5, W)
    assert [h.id for h in ranked] == [relevant_then, relevant_other_time, irrelevant_then]
    assert next(h for h in ranked if h.id == relevant_other_time).time == 0.5


def test_the_cut_is_relative_to_the_best_hit():
    strong, fair, weak = ids(3)
    fused = fuse(sims({strong: 0.8, fair: 0.4, weak: 0.1}), [], [], W)
    assert [h.id for h in cut(fused, 0.3)] == [strong, fair]
    assert cut([], 0.3) == []


def test_a_question_with_only_weak_evidence_still_gets_its_best_answer():
    # "what does the user drink" over "I switched from coffee to tea" (cosine 0.29): an absolute
    # floor returned nothing; the relative cut returns the best there is.
    answer = ids(1)[0]
    assert [h.id for h in cut(fuse(sims({answer: 0.29}), [], [], W), 0.3)] == [answer]


def test_last_time_puts_the_latest_match_first():
    older_better, newer, unrelated_newest = ids(3)
    fused = fuse(sims({older_better: 0.9, newer: 0.8, unrelated_newest: 0.1}), [], [], W)
    t = datetime(2026, 1, 1, tzinfo=UTC)
    times = {older_better: t, newer: t + timedelta(days=30), unrelated_newest: t + timedelta(days=60)}
    assert [h.id for h in latest_first(fused, times, 0.7)] == [newer, older_better, unrelated_newest]


# -- invariants ------------------------------------------------------------------------------


@given(weights, st.lists(st.tuples(any_score, any_score, any_score), min_size=1, max_size=8), unit, unit)
def test_every_score_is_in_0_1_and_reproducible_from_its_factors(w, evidence, outside, layer_weight):
    memory_ids = ids(len(evidence))
    similarity = {i: Similarity(e[0], e[0]) for i, e in zip(memory_ids, evidence, strict=True)}
    keyword = [hit(i, e[1]) for i, e in zip(memory_ids, evidence, strict=True)]
    rule = [hit(i, e[2]) for i, e in zip(memory_ids, evidence, strict=True)]
    fused = fuse(similarity, keyword, rule, w)
    links = [Link(a, b, 1) for a, b in itertools.pairwise(memory_ids)]
    fused = add_context(fused, links, w)
    fused = in_time(fused, set(memory_ids[::2]), outside, w)
    fused = prefer_layers(fused, dict.fromkeys(memory_ids, "session"), {"session": layer_weight})
    for h in fused:
        assert 0 <= h.score <= 1 and 0 <= h.relevance <= 1
        assert h.relevance == round(relevance(h.channels, w, h.other_language), 6)
        assert h.score == score_of(h)
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)


@given(weights, st.tuples(unit, unit, unit, unit), st.integers(0, 3), st.floats(0, 1))
def test_more_evidence_in_any_channel_never_lowers_the_score(w, evidence, channel, more):
    names = ["vector", "keyword", "rule", "context"]
    base = ChannelScores(**dict(zip(names, evidence, strict=True)))
    raised = base.model_copy(update={names[channel]: min(1.0, evidence[channel] + more)})
    assert relevance(raised, w) >= relevance(base, w) - 1e-12


@given(weights, unit, unit)
def test_two_memories_in_the_query_language_differ_only_by_shared_words(w, cosine, shared_words):
    quiet, paraphrase = ids(2)
    fused = {h.id: h for h in fuse(sims({quiet: cosine, paraphrase: cosine}), [hit(paraphrase, shared_words)], [], w)}
    assert fused[paraphrase].score >= fused[quiet].score


@given(st.lists(st.floats(0.0001, 1), min_size=1, max_size=20), unit)
def test_the_cut_never_empties_an_answer_and_always_keeps_the_best(similarities, ratio):
    memory_ids = ids(len(similarities))
    fused = fuse(sims(dict(zip(memory_ids, similarities, strict=True))), [], [], W)
    kept = cut(fused, ratio)
    assert kept and kept[0].id == fused[0].id


def test_hits_without_a_known_layer_are_dropped():
    a, b = ids(2)
    fused = fuse(sims({a: 0.5, b: 0.5}), [], [], W)
    assert [h.id for h in prefer_layers(fused, {a: "long_term"}, {"long_term": 1.0})] == [a]


def test_fused_hit_round_trips_through_json():
    a = ids(1)[0]
    [h] = fuse(sims({a: 0.5}), [hit(a, 0.5)], [], W)
    assert FusedHit.model_validate_json(h.model_dump_json()) == h


@given(
    st.lists(st.tuples(unit, unit, st.sampled_from([0.5, 1.0]), st.sampled_from([0.9, 1.0])), min_size=2, max_size=6)
)
def test_an_older_memory_ranks_below_every_newer_one_that_may_replace_it(channels):
    """A chain older -> newer -> ... ends each below the next, whatever their own evidence, time
    and layer; scores stay in [0, 1] and follow the formula explain states."""
    chain = ids(len(channels))
    fused = fuse(
        sims({m: v for m, (v, _, _, _) in zip(chain, channels, strict=True)}),
        [hit(m, k) for m, (_, k, _, _) in zip(chain, channels, strict=True)],
        [],
        W,
    )
    factors = {m: (t, layer) for m, (_, _, t, layer) in zip(chain, channels, strict=True)}
    fused = [h.model_copy(update={"time": factors[h.id][0], "layer": factors[h.id][1]}) for h in fused]
    fused = [h.model_copy(update={"score": score_of(h)}) for h in fused]
    order = below_newer(fused, dict(itertools.pairwise(chain)), W)
    ranked, position = {h.id: h for h in order}, {h.id: i for i, h in enumerate(order)}
    for older, newer in itertools.pairwise(chain):
        assert position[older] > position[newer] and ranked[older].score <= ranked[newer].score
        if ranked[older].score > 1e-4:  # above the rounding's resolution, strictly lower
            assert ranked[older].score < ranked[newer].score
        assert ranked[older].newer == newer
    for h in ranked.values():
        assert 0 <= h.score <= 1 and 0 <= h.relevance <= 1
        assert abs(h.score - score_of(h)) <= 2e-6


def test_a_newer_memory_answers_what_the_older_one_answered():
    old, new, other = ids(3)
    fused = fuse(sims({old: 0.8, new: 0.0, other: 0.3}), [hit(old, 0.9)], [], W)
    ranked = below_newer(fused, {old: new}, W)
    assert [h.id for h in ranked] == [new, old, other]
    by_id = {h.id: h for h in ranked}
    assert by_id[new].channels.older == by_id[old].relevance and by_id[old].standing < 1
    assert by_id[other].standing == 1 and by_id[other].newer is None


def test_a_mark_whose_newer_memory_is_not_a_candidate_changes_nothing():
    old, gone = ids(2)
    fused = fuse(sims({old: 0.8}), [], [], W)
    assert below_newer(fused, {old: gone}, W) == fused


@given(st.lists(st.tuples(unit, unit, unit), min_size=1, max_size=8), st.booleans())
def test_a_memory_with_no_evidence_of_its_own_never_outranks_one_that_has_it(channels, window_named):
    """Context lent by neighbours may bring a memory in and order such memories among themselves,
    never above a memory with vector, second-vector, keyword, rule or time evidence of its own."""
    memories = ids(len(channels))
    both = W.model_copy(update={"retrieval": 0.8})
    fused = fuse(
        {m: Similarity(v, v, r, r) for m, (v, _, r) in zip(memories, channels, strict=True)},
        [hit(m, k) for m, (_, k, _) in zip(memories, channels, strict=True) if k > 0],
        [],
        both,
    )
    lonely = ids(3)  # neighbours with nothing but context
    fused += [FusedHit(id=m, score=0.0, relevance=0.0, channels=ChannelScores()) for m in lonely]
    links = [Link(anchor, m, 1) for anchor, m in zip(memories, lonely, strict=False)]
    ranked = evidence_first(add_context(fused, links, both), window_named)
    own = [h for h in ranked if has_evidence(h, window_named) and h.score > 0]
    borrowed = [h for h in ranked if not has_evidence(h, window_named)]
    if own:
        assert all(b.score < min(o.score for o in own) for b in borrowed if b.score > 0)
    for h in ranked:
        assert 0 <= h.score <= 1 and abs(h.score - score_of(h)) <= 2e-6


def test_context_still_brings_a_neighbour_in_when_nothing_has_evidence_of_its_own():
    anchor, neighbour = ids(2)
    fused = [FusedHit(id=m, score=0.0, relevance=0.0, channels=ChannelScores()) for m in (anchor, neighbour)]
    assert evidence_first(fused) == fused


def test_second_vector_evidence_is_evidence_of_its_own():
    """A memory found by the second vector alone is never capped as a neighbour that only
    borrows context: it keeps its score, and a neighbour's lent context stays below it."""
    found, other, neighbour = ids(3)
    both = W.model_copy(update={"retrieval": 0.8})
    fused = fuse({found: Similarity(0.0, 0.0, 0.6, 0.6), other: Similarity(0.9, 0.9)}, [], [], both)
    fused += [FusedHit(id=neighbour, score=0.0, relevance=0.0, channels=ChannelScores())]
    ranked = {h.id: h for h in evidence_first(add_context(fused, [Link(other, neighbour, 1)], both))}
    assert ranked[found].channels.retrieval == 0.6 and has_evidence(ranked[found])
    assert ranked[found].standing == 1.0 and ranked[found].score == pytest.approx(0.48)
    assert ranked[neighbour].score < ranked[found].score
