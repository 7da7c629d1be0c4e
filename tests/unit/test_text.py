import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.domain.boundary import _NOT_BLANK, readable, visible
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
    """The write path refuses content of only invisible characters; the schema says the same of
    the BMP (beyond it, a pattern would not read alike in every dialect: the schema lets through
    what the write path then refuses, never the other way round)."""
    pattern = _NOT_BLANK.keywords["pattern"]
    published = re.fullmatch(pattern, text) is not None
    assert readable(text) == published if all(ord(c) <= 0xFFFF for c in text) else (published or not readable(text))


INVISIBLE = [
    "\u200b",
    "\u200b\u200c\u200d",
    " \x01\x02 ",
    "\ufeff",
    "\u2060\u00ad",
    "\t\n",
    "\u3164",  # Hangul filler
    "\u115f\u1160\uffa0",
    "\u034f",  # combining grapheme joiner
    "\ufe0f\ufe00",  # variation selectors
    "\u180b\u180f",
    "\u17b4",
    "\u2800",  # the blank braille pattern
    "\u2065\ufff0",
    "\U000e0001\U000e0020\U000e007f",  # tags
    "\U000e0100",
    "\U0001d173",
]


@pytest.mark.parametrize("text", INVISIBLE)
def test_invisible_text_is_not_readable(text):
    assert not readable(text)
    assert visible(text).strip() == ""


def test_every_default_ignorable_or_control_character_is_invisible():
    """Cross-checked with the regex module's Unicode tables (Default_Ignorable_Code_Point)."""
    regex = pytest.importorskip("regex")
    hidden = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cc}\s]")
    for code in range(1, 0x110000):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        if hidden.match(char):
            assert not readable(char), f"U+{code:04X}"


def test_visible_keeps_every_visible_character_and_every_space():
    text = "The\u200b user\tlikes \u3164green\x01 tea 👍\ufe0f"
    assert visible(text) == "The user\tlikes green tea 👍"


@pytest.mark.parametrize("text", ["a", "👍", "...", "用户喜欢茶", "\u200bok", "3"])
def test_visible_text_is_readable(text):
    assert readable(text)
