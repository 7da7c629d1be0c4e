import uuid

from engram.domain.search import ChannelHit, Weights, fuse

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
