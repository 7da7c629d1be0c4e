"""What an agent gets back is right, current and complete: the stories of issue 10, told through
REST (and MCP for remember), in Chinese and English, against the real service and database."""

from datetime import UTC, datetime, timedelta

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.domain.fusion import ChannelScores, Weights, relevance
from engram.domain.perspective import in_third_person as stored
from tests.conftest import tenant_api, unique_tenant

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)  # a Thursday


@pytest.fixture
async def api(service, engram):
    """(client, tenant context) for a fresh tenant."""
    ctx, key = await engram.tenants.create(unique_tenant("story"))
    async with tenant_api(service, ctx.name, key) as client:
        yield client, ctx


async def write(client, content: str, **fields) -> dict:
    response = await client.post("/memories", json={"content": content, **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def search(client, query: str, **fields) -> dict:
    response = await client.post("/search", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    return response.json()


async def active(client) -> list[str]:
    return [m["content"] for m in (await client.get("/memories", params={"limit": 500})).json()["items"]]


# -- 1. fusion you can reason about ----------------------------------------------------------


async def test_a_question_finds_its_answer_in_either_language_and_every_score_is_explained(api):
    client, _ = api
    for content in ["我现在每天喝绿茶", "The user drinks green tea every day", "用户住在杭州"]:
        await write(client, content)
    found = await search(client, "用户平时喝什么？", explain=True)
    contents = [h["memory"]["content"] for h in found["hits"]]
    assert set(contents[:2]) == {stored("我现在每天喝绿茶"), "The user drinks green tea every day"}
    explanation = found["explanation"]
    weights = Weights(**explanation["weights"])
    for fused in explanation["fused"]:
        assert 0 <= fused["score"] <= 1
        channels = ChannelScores(**fused["channels"])
        assert fused["relevance"] == round(relevance(channels, weights, fused["other_language"]), 6)
        assert fused["score"] == round(fused["relevance"] * fused["time"] * fused["layer"], 6)


async def test_identifiers_score_within_0_and_1_and_come_first(api):
    client, _ = api
    for content in ["我的订单号是 A1235", "My e-mail is ada@example.org", "我喜欢喝美式"]:
        await write(client, content)
    for query, expected in [("A1235", "我的订单号是 A1235"), ("ada@example.org", "My e-mail is ada@example.org")]:
        hits = (await search(client, query))["hits"]
        assert hits[0]["memory"]["content"] == stored(expected)
        assert all(0 <= h["score"] <= 1 for h in hits) and hits[0]["score"] >= 0.9


# -- 2. no empty answer when an answer exists -----------------------------------------------------


async def test_a_question_whose_answer_is_stored_never_comes_back_empty(api):
    client, _ = api
    await write(client, "I like Americano")
    await write(client, "I switched from coffee to tea")
    hits = (await search(client, "what does the user drink"))["hits"]
    assert [h["memory"]["content"] for h in hits][:1] == [stored("I switched from coffee to tea")]


# -- 3. time is a first-class question ------------------------------------------------------


@pytest.mark.parametrize("query", ["what did I do last week?", "上周我做了什么"])
async def test_a_question_about_a_time_returns_that_time_in_order(api, query):
    client, _ = api
    days = {"Went hiking on Mount Tai": 8, "和同事去吃了火锅": 6, "Finished the quarterly report": 4}
    for content, back in days.items():
        await write(client, content, type="event", occurred_at=(NOW - timedelta(days=back)).isoformat())
    await write(client, "Bought a new bicycle", type="event", occurred_at=(NOW - timedelta(days=30)).isoformat())
    await write(client, "The user likes jazz")  # today, not last week
    found = await search(client, query, now=NOW.isoformat(), top_k=10, explain=True)
    assert [h["memory"]["content"] for h in found["hits"]] == list(days)  # in the order they happened
    assert found["explanation"]["time_only"] and found["explanation"]["time_window"] is not None


async def test_last_time_prefers_the_latest_match_across_languages(api):
    client, _ = api
    await write(client, "I went to the dentist", type="event", occurred_at="2026-10-12T10:00:00+00:00")
    await write(client, "我去看了牙医", type="event", occurred_at="2026-11-20T10:00:00+00:00")
    await write(client, "我喜欢喝美式")
    for query in ["上次看牙医是什么时候", "when did I last go to the dentist"]:
        found = await search(client, query, now=NOW.isoformat(), explain=True)
        assert found["hits"][0]["memory"]["content"] == stored("我去看了牙医"), query
        assert found["explanation"]["prefer_recent"]


# -- 4. one current version of each fact ----------------------------------------------------


@pytest.mark.parametrize(
    ("before", "change", "query", "answer"),
    [
        (["我喜欢喝美式"], "我最近从咖啡换成了茶", "用户喝什么饮料", "我最近从咖啡换成了茶"),
        (
            ["I like Americano", "I drink coffee every morning"],
            "I switched from coffee to tea",
            "what does the user drink",
            "I switched from coffee to tea",
        ),
        (["I like Americano"], "我现在不喝咖啡了，改喝茶", "what does the user drink", "我现在不喝咖啡了，改喝茶"),
    ],
)
async def test_a_change_retires_every_statement_of_the_old_value(api, before, change, query, answer):
    client, _ = api
    for content in before:
        await write(client, content)
    result = await write(client, change)
    assert result["outcome"] == "superseded"
    assert sorted(m["content"] for m in result["superseded"]) == sorted(map(stored, before))
    assert await active(client) == [stored(change)]
    assert (await search(client, query))["hits"][0]["memory"]["content"] == stored(answer)
    old = await client.get(f"/memories/{result['superseded'][0]['id']}/history")
    assert [e["event"] for e in old.json()] == ["written", "superseded"]  # kept, with its history


@pytest.mark.parametrize(
    "wordings",
    [
        ["I like drinking americano", "Oh and I really like americano coffee", "The user enjoys drinking Americanos"],
        ["我喜欢喝美式", "用户喜欢喝美式咖啡"],
        ["I like Americano", "我喜欢喝美式"],
    ],
)
async def test_paraphrases_end_as_one_memory(api, wordings):
    client, _ = api
    outcomes = [(await write(client, w))["outcome"] for w in wordings]
    assert outcomes[0] == "created" and set(outcomes[1:]) <= {"touched", "merged", "duplicate"}
    assert len(await active(client)) == 1


async def test_a_changed_value_without_digits_is_never_touched_away(api):
    client, _ = api
    await write(client, "The wifi password for the office is kqzvmwhtrplxbnfd")
    result = await write(client, "The wifi password for the office is ajsueoxmcyrwlgqt")
    assert result["outcome"] == "superseded"
    hits = (await search(client, "office wifi password"))["hits"]
    assert [h["memory"]["content"] for h in hits] == ["The wifi password for the office is ajsueoxmcyrwlgqt"]


@pytest.mark.parametrize(
    "statements",
    [
        ["My sister likes cats", "I like cats"],
        ["我妹妹喜欢猫", "我喜欢猫"],
        ["我们公司有六千人", "我们公司有六百人"],
        ["我的上司是张三", "我的下属是张三"],
        ["他本科毕业", "她专科毕业"],
    ],
)
async def test_near_misses_stay_two_facts(api, statements):
    client, _ = api
    for content in statements:
        assert (await write(client, content))["outcome"] == "created"
    assert sorted(await active(client)) == sorted(map(stored, statements))


# -- 5. a transcript is never self-superseding --------------------------------------------------


async def test_transcript_turns_are_kept_verbatim(api):
    client, _ = api
    turns = [
        "Over a year",
        "I'm so glad your application has been approved!",
        "I live in Hangzhou",
        "I moved to Shanghai last month",  # as facts, this would retire the line before
        "I really like coffee",
        "I like coffee",  # as facts, a repeat
        "I like coffee",  # the same line again in the same conversation: a duplicate
    ]
    items = [{"content": t, "kind": "turn", "session_id": "chat-1"} for t in turns]
    response = await client.post("/memories/batch", json={"items": items})
    outcomes = [r["outcome"] for r in response.json()["results"]]
    assert outcomes == ["created"] * 6 + ["duplicate"]
    assert "I moved to Shanghai last month" in await active(client)  # verbatim: no date rewriting
    again = await client.post("/memories/batch", json={"items": [{**items[5], "session_id": "chat-2"}]})
    assert again.json()["results"][0]["outcome"] == "created"  # another conversation: another turn
    assert len(await active(client)) == 7


# -- 6. forgetting keeps what matters ---------------------------------------------------------


async def age(engram, ctx, days: float) -> None:
    """Every memory of the tenant written, used and stated that many days earlier."""
    async with engram.pool.acquire() as conn:
        await conn.execute(
            f"""UPDATE {ctx.schema}.memories SET created_at = created_at - make_interval(days => $1),
                reinforced_at = reinforced_at - make_interval(days => $1),
                last_accessed_at = last_accessed_at - make_interval(days => $1)""",
            float(days),
        )


async def test_forgetting_keeps_what_the_user_cares_about_and_says_why(api, engram):
    client, ctx = api
    for _ in range(3):
        liked = await write(client, "I like Americano", type="preference")
    assert liked["memory"]["mentions"] == 3
    diet = await write(client, "我最近在减肥", type="event")
    trip = await write(client, "Went to a pottery class", type="event")
    await client.patch(f"/memories/{trip['memory']['id']}", json={"pinned": True})
    await age(engram, ctx, 90)
    preview = (await client.post("/forgetting/run", params={"dry_run": True})).json()
    assert [c["memory"]["content"] for c in preview["candidates"]] == [stored("我最近在减肥")]
    assert "below" in preview["candidates"][0]["reason"] and preview["candidates"][0]["judge_reason"]
    kept = {k["content"]: k["reason"] for k in preview["kept"]}
    assert kept["Went to a pottery class"].startswith("pinned")
    assert kept[stored("I like Americano")].startswith("a current preference")
    assert preview["kept_by_reason"] == {"pinned": 1, "current fact": 1}
    run = (await client.post("/forgetting/run")).json()
    assert run["forgotten"] == [diet["memory"]["id"]]
    restored = (await client.post(f"/memories/{diet['memory']['id']}/restore")).json()
    assert restored["status"] == "active"
    assert (await client.post("/forgetting/run")).json()["forgotten"] == []  # restore reset its clock


async def test_only_a_memory_returned_to_an_agent_counts_as_used(api):
    client, _ = api
    kept = await write(client, "I like Americano")
    await write(client, "I went to the dentist", type="event")
    await search(client, "americano", explain=True)  # debugging: not a use
    await client.get("/memories")  # browsing: not a use
    memory = (await client.get(f"/memories/{kept['memory']['id']}")).json()
    assert memory["access_count"] == 0
    await search(client, "americano", top_k=1)
    assert (await client.get(f"/memories/{kept['memory']['id']}")).json()["access_count"] == 1


# -- 7. remember writes facts an agent can use later --------------------------------------------


async def test_remember_over_mcp_dates_splits_and_strips(service, engram):
    ctx, key = await engram.tenants.create(unique_tenant("story"))
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
    async with Client(streamable_http_client(f"{service.url}/t/{ctx.name}/mcp", http_client=http)) as client:
        assert "remember" in (client.instructions or "") and "write_memory" in (client.instructions or "")
        turns = [
            ("下个月3号要交房租", ["2027年1月3日要交房租"]),
            ("I have a dentist appointment tomorrow", ["The user has a dentist appointment on 2026-12-04"]),
            ("我喜欢喝咖啡，我老婆喜欢喝茶", ["用户喜欢喝咖啡", "用户的老婆喜欢喝茶"]),
            ("Oh and I really like jazz lol", ["The user really likes jazz"]),
        ]
        for said, stored in turns:
            result = await client.call_tool("remember", {"user": said, "now": NOW.isoformat()})
            assert not result.is_error, result
            assert [r["memory"]["content"] for r in result.structured_content["results"]] == stored
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "remember" in tools["write_memory"].description
