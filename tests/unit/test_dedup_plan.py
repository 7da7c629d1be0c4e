"""The write decision as a pure plan: what each new row is, given what is stored near it."""

import uuid
from datetime import UTC, datetime

import numpy as np
import pytest

from engram.domain.decisions import Insert, Looked, Target, Touch, with_candidates
from engram.domain.dedup import Thresholds
from engram.domain.judgement import MergeVerdict, Relation
from engram.domain.models import Kind, Memory, WriteResult
from engram.judge.rules import RuleJudge
from engram.services.dedup import plan
from engram.store.memories import MemoryRow

THRESHOLDS = Thresholds(touch=0.81, judge=0.52, noise=0.05, wide=0.2)
VECTOR = np.ones(4, dtype=np.float32) / 2


def row(content: str, kind: Kind = Kind.fact, slot: str | None = None) -> MemoryRow:
    return MemoryRow(
        content=content, kind=kind.value, type="fact", layer="long_term", source=None, external_id=None,
        importance=0.5, language="en", occurred_at=None, session_id="chat", task_id=None, tags=[], metadata={},
        dedup_key=content, identifiers=[], search_tokens="", embedding=VECTOR, embedding_model="m", slot=slot,
    )  # fmt: skip


def stored(content: str, kind: Kind = Kind.fact) -> Memory:
    now = datetime.now(UTC)
    return Memory(
        id=uuid.uuid4(), content=content, kind=kind, type="fact", layer="long_term", source=None, external_id=None,
        importance=0.5, language="en", created_at=now, updated_at=now, occurred_at=None, last_accessed_at=None,
        access_count=0, status="active", superseded_by=None, session_id="chat", task_id=None, tags=[],
        metadata={}, embedding_model="m",
    )  # fmt: skip


async def test_a_fact_change_retires_its_neighbours_but_a_turn_never_relates():
    old = stored("I live in Hangzhou")
    near = [[(old, 0.9)], [(old, 0.9)]]
    rows = [row("I moved to Shanghai"), row("I moved to Shanghai.", Kind.turn)]
    decisions = await plan(rows, {}, near, [[], []], THRESHOLDS, RuleJudge())
    assert isinstance(decisions[0], Insert) and [r.target.memory for r in decisions[0].retire] == [old]
    assert isinstance(decisions[1], Insert) and decisions[1].retire == () and decisions[1].looked == ()


async def test_an_exact_copy_is_a_duplicate_of_a_fact_and_of_a_turn():
    rows = [row("I like coffee", Kind.turn), row("I like coffee", Kind.turn)]
    decisions = await plan(rows, {}, [[], []], [[], []], THRESHOLDS, RuleJudge())
    assert isinstance(decisions[1], Touch) and decisions[1].exact and decisions[1].target.batch_index == 0


async def test_rows_of_one_batch_relate_to_each_other_with_or_without_a_slot():
    rows = [row("We met at the old harbour"), row("Oh and we met at the old harbour"), row("I like tea", slot="u")]
    rows += [row("I really like tea", slot="u")]
    decisions = await plan(rows, {}, [[]] * 4, [[]] * 4, THRESHOLDS, RuleJudge())
    assert isinstance(decisions[1], Touch) and decisions[1].target.batch_index == 0  # no slot
    assert isinstance(decisions[3], Touch) and decisions[3].target.batch_index == 2  # the same slot


async def test_the_callers_replaces_retire_even_what_the_rules_would_keep_and_win_over_a_touch():
    coffee, cat = stored("I love coffee"), stored("I have a cat named Luna")
    rows = [row("I really love coffee")]  # the same fact in other words as a memory the caller replaces
    near = [[(coffee, 0.95), (cat, 0.6)]]
    [decision] = await plan(rows, {}, near, [[]], THRESHOLDS, RuleJudge(), replaced=[[coffee, cat]])
    assert isinstance(decision, Insert)  # not a touch of what it retires
    assert {(r.target.memory.id, r.by_caller) for r in decision.retire} == {(coffee.id, True), (cat.id, True)}


async def test_a_fact_said_again_after_an_earlier_row_of_the_batch_retired_it_stays():
    tea = stored("I drink tea")
    rows = [row("I stopped drinking tea"), row("I drink tea")]  # the later word wins
    exact = {"I drink tea": tea}
    first, second = await plan(rows, exact, [[(tea, 0.9)], []], [[], []], THRESHOLDS, RuleJudge())
    assert first.retire == () and isinstance(second, Touch) and second.target.memory == tea


async def test_nothing_of_another_persons_is_retired_on_a_judges_word():
    class Careless(RuleJudge):
        async def relate_many(self, new, existing):
            return [MergeVerdict(relation=Relation.conflict, reason="says so") for _ in existing]

    sister = stored("My sister lives in Boston")
    [decision] = await plan([row("I moved to Denver")], {}, [[(sister, 0.8)]], [[]], THRESHOLDS, Careless())
    assert decision.retire == () and decision.marks == ()


async def test_a_change_the_rules_are_unsure_of_marks_instead_of_retiring():
    sister = stored("My sister lives in Boston")
    [decision] = await plan([row("My sister moved to Denver")], {}, [[(sister, 0.7)]], [[]], THRESHOLDS, RuleJudge())
    assert isinstance(decision, Insert) and decision.retire == ()  # perhaps two sisters
    assert [m.target.memory for m in decision.marks] == [sister]
    assert [(x.target.memory, x.relation) for x in decision.looked] == [(sister, Relation.may_update)]


def test_a_target_is_a_memory_or_a_row_of_the_batch_never_both_or_neither():
    with pytest.raises(ValueError):
        Target()
    with pytest.raises(ValueError):
        Target(memory=stored("x"), batch_index=0)


def test_candidates_are_the_active_memories_of_this_user_marked_first_then_closest():
    new, mine, close, sisters, retired = (stored(t) for t in ("a", "b", "c", "d", "e"))
    gone = retired.model_copy(update={"status": "superseded"})
    looked = (
        Looked(Target(memory=mine), 0.55, Relation.may_update),
        Looked(Target(memory=close), 0.80, Relation.different),
        Looked(Target(memory=sisters), 0.95, Relation.different, someone_else=True),
        Looked(Target(memory=retired), 0.90, Relation.conflict),
    )
    result = WriteResult(outcome="created", memory=new)
    now = {m.id: m for m in (new, mine, close, sisters)} | {retired.id: gone}
    [out] = with_candidates([result], [Insert(looked=looked)], [{mine.id}], lambda t: t.memory, now)
    assert [(c.id, c.marked) for c in out.candidates] == [(mine.id, True), (close.id, False)]
