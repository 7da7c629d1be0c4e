from engram.domain.keyword import MAX_MATCHING_DOCUMENTS, KeywordQuery, idf


def test_rare_tokens_weigh_more_and_absent_tokens_most():
    assert idf(100, 0) > idf(100, 1) > idf(100, 50) > idf(100, 100) > 0


def test_only_informative_present_tokens_are_matched_on():
    query = KeywordQuery.build(["user", "corgi", "zebra"], 10_000, [MAX_MATCHING_DOCUMENTS + 1, 3, 0])
    assert query.tsquery == "'corgi'"
    assert query.total_weight == sum(query.weights)
    assert query.weights[1] > query.weights[0]
