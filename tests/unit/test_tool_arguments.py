"""An MCP tool call's unknown arguments: named, with the one probably meant."""

from hypothesis import given
from hypothesis import strategies as st

from engram.mcp.server import unknown_arguments

NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)


def test_an_argument_named_by_one_of_its_words_or_misspelt_gets_the_meant_one():
    known = {"memory_id", "reason", "user_id"}
    assert "'id' (did you mean memory_id?)" in str(unknown_arguments({"id"}, known))
    assert "'reasn' (did you mean reason?)" in str(unknown_arguments({"reasn", "memory_id"}, known))
    nothing_close = unknown_arguments({"colour"}, known)
    assert nothing_close is not None and "did you mean" not in str(nothing_close)
    assert "memory_id, reason, user_id" in str(nothing_close)  # what it takes instead


@given(st.sets(NAMES, max_size=6), st.sets(NAMES, max_size=6))
def test_only_arguments_the_tool_does_not_take_are_refused_and_the_first_is_the_field(given_names, known):
    problem = unknown_arguments(given_names, known)
    unknown = sorted(given_names - known)
    assert (problem is None) == (not unknown)
    if problem is not None:
        assert problem.field == unknown[0]
