"""The LLM judge through real litellm and HTTP, against a local OpenAI-compatible server with
scripted answers: good answers are used, malformed ones, errors and timeouts fall back to rules."""

from datetime import UTC, datetime, timedelta

import pytest

from engram.domain.judgement import Turn
from engram.domain.models import MemoryFilter, NewMemory, Status, WriteOutcome
from engram.domain.search import SearchRequest
from engram.runtime import open_engram
from engram.settings import LLMSettings
from tests.conftest import free_port, unique_tenant
from tests.llm_server import LLMServer


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
    assert [r.memory.content for r in result.results] == ["我喜欢喝美式"]  # what the rules keep


async def test_the_model_decides_conflicts_in_the_judge_band(llm_engram, llm, llm_tenant):
    old = (await llm_engram.writes.write(llm_tenant, NewMemory(content="My favourite sport is tennis"))).memory
    llm.script.reply_json({"relation": "conflict", "reason": "the favourite changed"})
    new = await llm_engram.writes.write(llm_tenant, NewMemory(content="My favourite sport is football"))
    assert new.outcome == WriteOutcome.superseded and new.related.id == old.id
    assert "My favourite sport is tennis" in llm.script.requests[-1]["messages"][1]["content"]
    assert (await llm_engram.memories.get(llm_tenant, old.id)).status == Status.superseded


async def test_a_supplement_without_merged_text_is_decided_by_the_rules(llm_engram, llm, llm_tenant):
    await llm_engram.writes.write(llm_tenant, NewMemory(content="My favourite sport is tennis"))
    llm.script.reply_json({"relation": "supplement"})
    result = await llm_engram.writes.write(llm_tenant, NewMemory(content="My favourite sport is football"))
    assert result.outcome == WriteOutcome.created  # the rules see two different facts


async def test_different_numbers_are_never_left_to_the_model(llm_engram, llm, llm_tenant):
    await llm_engram.writes.write(llm_tenant, NewMemory(content="My locker code is 4711"))
    asked = len(llm.script.requests)
    result = await llm_engram.writes.write(llm_tenant, NewMemory(content="My locker code is 4712"))
    assert result.outcome == WriteOutcome.created and len(llm.script.requests) == asked


async def test_consolidation_derives_a_linked_higher_level_memory(llm_engram, engram, llm, llm_tenant):
    contents = ["I drink coffee every morning", "I take my coffee without sugar", "I like my coffee black"]
    # Stored through the rule judge, so no scripted answer is spent on them.
    sources = [(await engram.writes.write(llm_tenant, NewMemory(content=c))).memory for c in contents]
    llm.script.reply_json({"content": "The user drinks black coffee every morning"})
    for _ in range(3):
        llm.script.reply_json({"relation": "different"})  # the derived memory meets its sources on write
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
