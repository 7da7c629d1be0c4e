from engram.domain.keyword import MATCH_BUDGET, KeywordQuery, TokenStatistics, idf


def test_rare_tokens_weigh_more_and_absent_tokens_most():
    assert idf(100, 0) > idf(100, 1) > idf(100, 40) > 0
    assert idf(100, 60) == idf(100, 100) == 0  # in most memories: no evidence at all
    assert idf(1, 1) > 0  # the words of a new tenant's only memory still count


def test_candidates_come_from_the_rarest_tokens_within_the_budget():
    query = KeywordQuery.build(["user", "corgi", "walk", "zebra"], 100_000, [MATCH_BUDGET * 5, 3, 900, 0])
    assert query.match_tokens == ["corgi", "walk"]
    assert query.tsquery == "'corgi' | 'walk'"
    assert query.total_weight == sum(query.weights)


def test_the_rarest_token_is_used_even_over_budget():
    query = KeywordQuery.build(["user"], 100_000, [MATCH_BUDGET * 5])
    assert query.match_tokens == ["user"]


def test_statistics_estimate_unlisted_tokens_as_rarer_than_the_rarest_listed():
    stats = TokenStatistics(documents=10_000, common={"user": 0.3}, floor=0.002)
    assert stats.document_frequency("user") == 3000
    assert stats.document_frequency("corgi") == 10
