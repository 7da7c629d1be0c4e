"""The LLM judge through real litellm and HTTP, against a local OpenAI-compatible server with
scripted answers: good answers are used, malformed ones, errors and timeouts fall back to rules."""

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from engram.domain.judgement import Turn
from engram.domain.models import MemoryFilter, NewMemory, Status, WriteOutcome
from engram.domain.search import SearchRequest
from engram.runtime import open_engram
from engram.settings import LLMSettings
from tests.conftest import free_port, unique_tenant
from tests.llm_server import LLMServer


async def until(condition) -> None:
    while not condition():
        await asyncio.sleep(0.01)


@pytest.fixture(scope="module")
def llm():
    with LLMServer(free_port()) as server:
        yield server


@pytest.fixture(scope="module")
async def llm_engram(settings, bootstrapped, llm):
    configured = settings.model_copy(
        update={
            "llm": LLMSettings(
                model="openai/scripted", api_base=llm.api_base, api_key="test-key", timeout_seconds=1.5, retries=0
            )
        }
    )
    opened = await open_engram(configured, bootstrapped)
    yield opened
    await opened.close()


@pytest.fixture
async def llm_tenant(llm_engram, llm):
    llm.script.answers.clear()
    llm.script.requests.clear()
    ctx, _ = await llm_engram.tenants.create(unique_tenant("llm"))
    return ctx


async def test_the_model_picks_the_facts(llm_engram, llm, llm_tenant):
    llm.script.reply_json(
        {
            "should_write": True,
            "reason": "diet",
            "facts": [{"content": "The user is vegetarian", "type": "preference", "importance": 0.8}],
        }
    )
    result = await llm_engram.ingest.remember(llm_tenant, Turn(user="I stopped eating meat last year, you know"))
    assert result.judge == "llm"
    assert [(r.outcome, r.memory.content, r.memory.importance) for r in result.results] == [
        (WriteOutcome.created, "The user is vegetarian", pytest.approx(0.8))
    ]
    sent = llm.script.requests[0]
    assert sent["model"] == "scripted" and "I stopped eating meat" in sent["messages"][1]["content"]


@pytest.mark.parametrize("failure", ["malformed", "wrong schema", "http error", "timeout"])
async def test_failures_fall_back_to_the_rules(llm_engram, llm, llm_tenant, failure):
    {
        "malformed": lambda: llm.script.reply_text("Sure! Here are the facts: vegetarian"),
        "wrong schema": lambda: llm.script.reply_json({"should_write": "perhaps", "facts": "many"}),
        "http error": lambda: llm.script.fail(500),
        "timeout": lambda: llm.script.stall(5),
    }[failure]()
    before = llm_engram.judge.fallbacks
    result = await llm_engram.ingest.remember(llm_tenant, Turn(user="我喜欢喝美式"))
    assert llm_engram.judge.fallbacks == before + 1
    assert [r.memory.content for r in result.results] == ["用户喜欢喝美式"]  # what the rules keep


def relations(*answers: dict) -> dict:
    """A scripted answer to the write path's one question about all of a new fact's neighbours."""
    return {"relations": [{"index": i, **answer} for i, answer in enumerate(answers, 1)]}


async def test_the_model_is_asked_once_about_every_neighbour_and_retires_what_it_replaces(
    llm_engram, engram, llm, llm_tenant
):
    # Stored by the rule judge, so no scripted answer is spent on them.
    tennis = (await engram.writes.write(llm_tenant, NewMemory(content="I play tennis every Sunday"))).memory
    racket = (await engram.writes.write(llm_tenant, NewMemory(content="I bought a new tennis racket"))).memory
    asked = len(llm.script.requests)
    llm.script.reply_json(
        relations(
            {"relation": "conflict", "reason": "the Sunday sport changed"},
            {"relation": "different", "reason": "a purchase, still true"},
        )
    )
    new = await llm_engram.writes.write(llm_tenant, NewMemory(content="These days my Sundays are for football"))
    assert len(llm.script.requests) == asked + 1  # one question for all the neighbours
    sent = llm.script.requests[-1]["messages"][1]["content"]
    assert tennis.content in sent and racket.content in sent  # "The user plays tennis every Sunday"
    # The answer is read by index: which neighbour got which number is in the question itself.
    order = [e["memory"] for e in json.loads(sent)["existing"]]
    expected = {tennis.content: tennis.id, racket.content: racket.id}
    retired = {expected[order[0]]} if order[0] in expected else set()
    assert {m.id for m in new.superseded} == retired
    assert new.outcome == (WriteOutcome.superseded if retired else WriteOutcome.created)


async def test_a_supplement_without_merged_text_is_decided_by_the_rules(llm_engram, llm, llm_tenant):
    await llm_engram.writes.write(llm_tenant, NewMemory(content="My favourite sport is tennis"))
    llm.script.reply_json(relations({"relation": "supplement"}))
    result = await llm_engram.writes.write(llm_tenant, NewMemory(content="My favourite sport is football"))
    assert result.outcome == WriteOutcome.superseded  # the rules: a new favourite replaces the old one
    assert "The user's favourite sport is tennis" in llm.script.requests[-1]["messages"][1]["content"]


async def test_the_model_cannot_merge_facts_whose_numbers_differ(llm_engram, llm, llm_tenant):
    await llm_engram.writes.write(llm_tenant, NewMemory(content="My locker code is 4711"))
    llm.script.reply_json(relations({"relation": "same", "reason": "wrongly the same"}))
    result = await llm_engram.writes.write(llm_tenant, NewMemory(content="My locker code is 4712"))
    assert result.outcome == WriteOutcome.created  # order 12345 is not order 12346, whatever it says


async def test_the_model_may_replace_a_number_with_a_new_one(llm_engram, llm, llm_tenant):
    old = (await llm_engram.writes.write(llm_tenant, NewMemory(content="I run 5 km every morning"))).memory
    llm.script.reply_json(relations({"relation": "conflict", "reason": "a longer run now"}))
    result = await llm_engram.writes.write(llm_tenant, NewMemory(content="I've upped my morning runs to 10 km"))
    assert result.outcome == WriteOutcome.superseded and [m.id for m in result.superseded] == [old.id]


async def test_consolidation_derives_a_linked_higher_level_memory(llm_engram, engram, llm, llm_tenant):
    contents = ["I drink coffee every morning", "I take my coffee without sugar", "I like my coffee black"]
    # Stored through the rule judge, so no scripted answer is spent on them.
    sources = [(await engram.writes.write(llm_tenant, NewMemory(content=c))).memory for c in contents]
    llm.script.reply_json({"content": "The user drinks black coffee every morning"})
    llm.script.reply_json(relations(*[{"relation": "different"}] * 3))  # the derived memory meets its sources
    report = await llm_engram.consolidation.run(llm_tenant)
    [derived] = report.derived
    assert derived.memory.content == "The user drinks black coffee every morning"
    assert sorted(derived.memory.derived_from) == sorted(s.id for s in sources)
    assert [e.event for e in await llm_engram.memories.history(llm_tenant, derived.memory.id)] == ["written", "derived"]
    active = await llm_engram.memories.list(llm_tenant, MemoryFilter())
    assert len(active.items) == 4  # the sources stay
    again = await llm_engram.consolidation.run(llm_tenant)
    assert again.derived == []  # a cluster is summarised once


async def test_forgetting_asks_the_model_for_the_final_word(llm_engram, llm, llm_tenant):
    memory = (
        await llm_engram.writes.write(llm_tenant, NewMemory(content="Went to an Esperanto meetup", type="event"))
    ).memory
    llm.script.reply_json({"forget": False, "reason": "a lasting interest"})
    report = await llm_engram.forgetting.run(llm_tenant, now=datetime.now(UTC) + timedelta(days=120))
    assert [(c.memory.id, c.forget) for c in report.candidates] == [(memory.id, False)]
    assert (await llm_engram.memories.get(llm_tenant, memory.id)).status == Status.active


CONVERSATION = (
    "Bart: Hey, did you know? I'm going to perform a magic trick at the New Year's Eve party!\n"
    "Assistant: That's fantastic! The audience will love it.\n"
    "Bart: I'm really looking forward to that evening; I want to make it very special!"
)


async def test_a_pasted_conversation_is_rewritten_into_a_search_query(llm_engram, llm, llm_tenant):
    written = await llm_engram.writes.write(llm_tenant, NewMemory(content="Bart danced at the Christmas party"))
    llm.script.reply_json({"query": "Bart party performance dance"})
    result = await llm_engram.search.search(llm_tenant, SearchRequest(query=CONVERSATION, explain=True))
    assert result.explanation.rewritten == "Bart party performance dance"
    assert result.explanation.searched_text == "Bart party performance dance"
    assert result.explanation.rewrite_ms is not None and result.hits[0].memory.id == written.memory.id
    assert "magic trick" in llm.script.requests[-1]["messages"][1]["content"]


async def test_a_short_query_is_not_sent_and_a_failed_rewrite_keeps_the_query(llm_engram, llm, llm_tenant):
    short = await llm_engram.search.search(llm_tenant, SearchRequest(query="Christmas party", explain=True))
    assert llm.script.requests == [] and short.explanation.rewrite_ms is None
    llm.script.fail(500)
    result = await llm_engram.search.search(llm_tenant, SearchRequest(query=CONVERSATION, explain=True))
    assert result.explanation.rewritten is None and result.explanation.searched_text == CONVERSATION
    assert result.explanation.rewrite_ms is not None  # it was tried


async def test_concurrent_writers_of_related_facts_all_land_while_the_model_thinks(llm_engram, llm, llm_tenant):
    """The model is asked with no lock held; writers whose neighbourhood changed meanwhile ask again
    instead of failing, and every one of them lands."""
    for _ in range(200):
        llm.script.reply_json({"relations": []}, delay=0.2)
    trips = [f"Trip {i}: the user flew to city number {i} in May" for i in range(8)]
    results = await asyncio.gather(*(llm_engram.writes.write(llm_tenant, NewMemory(content=t)) for t in trips))
    assert [r.outcome for r in results] == [WriteOutcome.created] * len(trips)
    stored = await llm_engram.memories.list(llm_tenant, MemoryFilter())
    assert sorted(m.content for m in stored.items) == sorted(trips)


async def test_writes_waiting_for_the_model_hold_no_database_connection(llm_engram, llm, llm_tenant):
    """More writers than the pool has connections wait for the model at once; searches go on."""
    llm.script.reply_json({"relations": []})
    await llm_engram.writes.write(llm_tenant, NewMemory(content="Trip 0: the user flew to city number 0 in May"))
    many = llm_engram.settings.pool_max_size + 2
    for _ in range(many):
        llm.script.reply_json({"relations": []})
    before, asked = llm_engram.judge.fallbacks, len(llm.script.requests)
    llm.script.gate.clear()
    try:
        trips = [f"Trip {i}: the user flew to city number {i} in May" for i in range(1, many + 1)]
        writing = asyncio.gather(*(llm_engram.writes.write(llm_tenant, NewMemory(content=t)) for t in trips))
        await asyncio.wait_for(until(lambda: len(llm.script.requests) == asked + many), 60)  # all wait for the model
        found = await asyncio.wait_for(llm_engram.search.search(llm_tenant, SearchRequest(query="Trip 0")), 60)
        assert found.hits[0].memory.content.startswith("Trip 0")
        assert llm_engram.judge.fallbacks == before and not writing.done()  # found while every writer waited
    finally:
        llm.script.gate.set()
    assert {r.outcome for r in await writing} == {WriteOutcome.created}


async def test_a_write_decided_before_another_landed_is_decided_again(llm_engram, engram, llm, llm_tenant):
    """The model was asked about Paris; while it thought, Paris was forgotten and Rome written. The
    answer about Paris must not be applied to a world that holds Rome: the write is decided again."""
    paris = (await engram.writes.write(llm_tenant, NewMemory(content="The user lives in Paris"))).memory
    moved = {"relations": [{"index": 1, "relation": "conflict", "reason": "moved"}]}
    llm.script.reply_json(moved)
    llm.script.reply_json(moved)
    asked = len(llm.script.requests)
    llm.script.gate.clear()
    try:
        writing = asyncio.create_task(
            llm_engram.writes.write(llm_tenant, NewMemory(content="The user lives in Berlin now"))
        )
        await asyncio.wait_for(until(lambda: len(llm.script.requests) == asked + 1), 60)  # read, then asked
        await engram.memories.forget(llm_tenant, paris.id)
        rome = (await engram.writes.write(llm_tenant, NewMemory(content="The user lives in Rome"))).memory
    finally:
        llm.script.gate.set()
    berlin = await writing
    assert berlin.outcome == WriteOutcome.superseded and [m.id for m in berlin.superseded] == [rome.id]
    active = await llm_engram.memories.list(llm_tenant, MemoryFilter())
    assert [m.content for m in active.items] == ["The user lives in Berlin now"]
