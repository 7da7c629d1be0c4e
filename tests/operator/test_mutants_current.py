"""`make mutants` stays meaningful: each mutant's line is still in the code, exactly once, so a
refactoring that moves a promise's line fails here instead of leaving the mutant unapplied."""

import pytest

from tests.mutants import MUTANTS, ROOT


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.what for m in MUTANTS])
def test_each_mutant_applies_to_exactly_one_place(mutant):
    assert (ROOT / mutant.path).read_text().count(mutant.before) == 1, mutant.before
