import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.domain.boundary import _NOT_BLANK, readable
from engram.domain.text import duplicate_key, guess_language, is_conversation, normalise


def test_normalise_folds_case_width_and_spaces():
    assert normalise("  I  like\tＣoffee ") == "i like coffee"


def test_duplicate_key_ignores_case_and_spacing_but_not_scope():
    a = duplicate_key("I like coffee", "long_term", None)
    assert a == duplicate_key("i like  COFFEE", "long_term", None)
    assert a != duplicate_key("I like coffee", "session", "s1")
    assert duplicate_key("x", "session", "s1") != duplicate_key("x", "session", "s2")


def test_language_guess():
    assert guess_language("用户偏好顺丰快递") == "zh"
    assert guess_language("The user likes tea") == "en"
    assert guess_language("我喜欢 coffee") == "zh"
    assert guess_language("12345") == "und"


def test_a_conversation_is_told_from_a_question():
    assert not is_conversation("what did I buy last week")
    assert is_conversation("Bart: I'm performing tonight!\nAssistant: Great!")
    assert is_conversation("I told you about it " * 10)


@given(st.text(alphabet=st.characters(exclude_characters="\x00"), max_size=12))
def test_readable_content_is_what_the_published_pattern_accepts(text):
    """The write path refuses content of only invisible characters; the schema says the same."""
    pattern = _NOT_BLANK.keywords["pattern"]
    assert readable(text) == (re.fullmatch(pattern, text) is not None)


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d", " \x01\x02 ", "\ufeff", "\u2060\u00ad", "\t\n"])
def test_invisible_text_is_not_readable(text):
    assert not readable(text)


@pytest.mark.parametrize("text", ["a", "👍", "...", "用户喜欢茶", "\u200bok", "3"])
def test_visible_text_is_readable(text):
    assert readable(text)
