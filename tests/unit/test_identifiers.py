import pytest

from engram.domain.identifiers import extract_identifiers


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
