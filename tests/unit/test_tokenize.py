from engram.domain.tokenize import document_tokens, query_tokens, to_tsquery_literal, to_tsvector_literal


def test_chinese_becomes_bigrams_and_unigrams():
    tokens = document_tokens("用户偏好顺丰快递")
    assert {"顺丰", "快递", "偏好"} <= set(tokens)
    assert "快" in tokens  # unigrams let one-character queries match


def test_word_inside_longer_chinese_word_is_found():
    assert "柯基" in document_tokens("我家有一只柯基犬")


def test_a_chinese_query_is_cut_into_words_not_across_them():
    assert query_tokens("顺丰快递") == ["顺丰", "快递"]  # no "丰快": nobody's word
    assert query_tokens("用户平时喝什么？") == ["平时", "喝"]  # the user and the question word ask for nothing
    assert query_tokens("我家有一只柯基犬")[-2:] == ["柯基", "基犬"]  # a long word by its bigrams
    assert set(query_tokens("what does the user drink")) == {"drink"}


def test_single_character_query_is_kept_unless_a_stop_character():
    assert query_tokens("茶") == ["茶"]
    assert query_tokens("的") == []


def test_identifiers_stay_whole_and_english_stopwords_go():
    tokens = query_tokens("Where is my order 12345 on flight CA981? mail bob@example.com")
    assert {"12345", "ca981", "bob@example.com", "order", "flight"} <= set(tokens)
    assert "is" not in tokens and "my" not in tokens


def test_tsvector_literal_quotes_and_counts_positions():
    literal = to_tsvector_literal(["it's", "a\\b", "it's"])
    assert literal == "'it''s':1,3 'a\\\\b':2"


def test_empty_query_has_no_tsquery():
    assert to_tsquery_literal([]) is None
    assert to_tsquery_literal(["a", "b"]) == "'a' | 'b'"
