import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.domain.identifiers import PREFIX_WORDS, extract_identifiers, query_identifiers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my order 12345 was late", ["12345"]),
        ("订单号12345还没到", ["12345"]),
        ("flight CA981 to Beijing", ["ca981"]),
        ("write to Bob.Smith@Example.com", ["bob.smith@example.com"]),
        ("call +86 138-0013-8000", ["8613800138000"]),
        ("due 2024-05-03", ["2024-05-03"]),
        ("I have 2 cats and 10 dogs", []),
        ("tracking SF1234567890", ["sf1234567890"]),
    ],
)
def test_extracts_normalised_identifiers(text, expected):
    assert extract_identifiers(text) == expected


def test_plain_words_are_not_identifiers():
    assert extract_identifiers("I like coffee in the morning") == []


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("flight CA 981", ["ca981"]),
        ("flight ca981", ["ca981"]),
        ("flight CA-981", ["ca981"]),
        ("flight ＣＡ９８１", ["ca981"]),
        ("locker B1234", ["b1234"]),
        ("locker b-1234", ["b1234"]),
        ("订单１２３４５", ["12345"]),
        ("order 12345", ["12345"]),
        ("ticket ABCD-1234", ["abcd1234"]),
        ("part x1-y2-z3", ["x1y2z3"]),
        ("in 2024 we moved", ["2024"]),  # "in" is a word, not a prefix
        ("is 42 enough", []),
    ],
)
def test_a_query_asks_for_the_canonical_form_however_it_was_typed(typed, canonical):
    assert query_identifiers(typed) == canonical


def test_a_memory_keeps_the_spelling_it_was_written_with_beside_the_canonical_form():
    assert extract_identifiers("Flight CA 981 to Beijing") == ["ca981", "981"]
    assert extract_identifiers("Locker B-1234") == ["b1234", "b-1234"]
    assert extract_identifiers("Locker B1234") == ["b1234"]


letters = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ", min_size=1, max_size=3).filter(
    lambda s: s.lower() not in PREFIX_WORDS
)
digits = st.text(alphabet="0123456789", min_size=3, max_size=7)


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@given(letters, digits, st.sampled_from(["", " ", "-"]), st.booleans(), st.booleans())
def test_every_typing_of_a_code_meets_every_other(prefix, number, separator, lower, wide):
    """However a memory wrote a code and however a query types it (case, space, hyphen, full
    width), the query's canonical forms are all among the memory's identifiers."""
    written = f"my booking {prefix}{separator}{number} is confirmed"
    code = f"{prefix.lower() if lower else prefix}{separator}{number}"
    typed = f"where is {_full_width(code) if wide else code}"
    asked = query_identifiers(typed)
    assert asked == [f"{prefix.lower()}{number}"]
    assert set(asked) <= set(extract_identifiers(written))
