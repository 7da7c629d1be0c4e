"""What the write path does with a user's words: the stories of issue 27, told through REST, MCP
and the CLI, in English and Chinese, against the real service and database. Nothing is damaged,
nothing true is retired by mistake, what the rules cannot settle the agent settles (candidates,
replaces, newer), dates are read, and evidence comes before context."""

import json
from datetime import UTC, datetime

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import tenant_api, unique_tenant
from tests.integration.test_cli import cli_env  # noqa: F401 - the fixture
from tests.integration.test_cli import engram as run_cli

NOW = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)  # a Monday


@pytest.fixture
async def api(service, engram):
    ctx, key = await engram.tenants.create(unique_tenant("words"))
    async with tenant_api(service, ctx.name, key) as client:
        yield client


async def remember(client, said: str, **fields) -> dict:
    response = await client.post("/remember", json={"user": said, "now": NOW.isoformat(), **fields})
    assert response.status_code == 200, response.text
    return response.json()


async def write(client, content: str, **fields) -> dict:
    response = await client.post("/memories", json={"content": content, "now": NOW.isoformat(), **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()


async def search(client, query: str, **fields) -> list[dict]:
    response = await client.post("/search", json={"query": query, "now": NOW.isoformat(), **fields})
    assert response.status_code == 200, response.text
    return response.json()["hits"]


async def active(client) -> dict[str, dict]:
    return {m["content"]: m for m in (await client.get("/memories", params={"limit": 500})).json()["items"]}


# -- 1. what is stored is what was said -------------------------------------------------------


async def test_remember_keeps_every_word_and_names_that_start_like_filler(api):
    said = {
        "Yesterday I went hiking in the Alps with my sister Mia.": (
            "On 2026-12-06 the user went hiking in the Alps with the user's sister Mia"
        ),
        "Sophie is my daughter.": "Sophie is the user's daughter",
        "Also, Umberto is my boss": "Umberto is the user's boss",
        "Oh and Wellington is where I grew up lol": "Wellington is where the user grew up",
        "对了，我在酒吧认识了我老婆哈哈": "用户在酒吧认识了用户的老婆",
    }
    for turn, stored in said.items():
        result = await remember(api, turn)
        assert [r["memory"]["content"] for r in result["results"]] == [stored], turn
    hiking = (await active(api))["On 2026-12-06 the user went hiking in the Alps with the user's sister Mia"]
    assert hiking["occurred_at"].startswith("2026-12-06")


async def test_a_fact_is_split_only_where_each_part_stands_alone(api):
    coffee = await remember(api, "I love coffee, I drink two cups every morning")
    assert [r["memory"]["content"] for r in coffee["results"]] == [
        "The user loves coffee, the user drinks two cups every morning"
    ]
    moved = await remember(api, "I moved to Berlin, I work at Siemens now")
    assert len(moved["results"]) == 2  # each stands alone


async def test_the_limit_holds_for_what_was_sent_not_what_dates_make_of_it(api):
    content = ("I have a meeting tomorrow and a call tomorrow. " * 200)[:7990]
    assert len(content) <= 8000
    written = await write(api, content, kind="fact")
    assert len(written["memory"]["content"]) > 8000  # "tomorrow" became "on 2026-12-08"
    too_long = await api.post("/memories", json={"content": "x" * 8001})
    assert too_long.status_code == 422 and "content" in too_long.text


# -- 2. nothing true is retired by mistake ----------------------------------------------------


@pytest.mark.parametrize(
    "statements",
    [
        ["I have a cat named Luna", "I have a dog named Max"],
        ["I love jazz", "Sophie likes jazz"],
        ["My older sister is called Rachel", "My younger sister is Becca"],
        ["王芳今年三十二岁", "我叔叔现在五十岁了"],
        ["张伟的邮箱是zw88@163.com", "同事小李的邮箱是li@x.com", "我的邮箱是me@qq.com"],
        ["我叔叔住在长沙", "我舅舅搬到了深圳"],
        ["I live in Denver", "My brother moved to Austin"],
    ],
)
async def test_facts_of_other_people_or_other_things_of_a_kind_are_all_kept(api, statements):
    for statement in statements:
        result = await write(api, statement)
        assert result["outcome"] == "created" and result["superseded"] == [], (statement, result)
    kept = await active(api)
    assert len(kept) == len(statements) and all(m["newer"] is None for m in kept.values())


# -- 3 and 4. a change of mind, with detail, settled by the rules or by the agent ------------


async def test_a_change_of_mind_with_detail_retires_the_old_fact_and_search_finds_the_new(api):
    await remember(api, "I love coffee, I drink two cups every morning")
    await remember(api, "I am vegetarian", session_id="s1")
    change = await remember(api, "I switched from coffee to tea", session_id="s1")
    [result] = change["results"]
    assert result["outcome"] == "superseded"
    assert [m["content"] for m in result["superseded"]] == [
        "The user loves coffee, the user drinks two cups every morning"
    ]
    hits = await search(api, "What does the user drink?")
    assert hits[0]["memory"]["content"] == "The user switched from coffee to tea"
    assert all("coffee, the user drinks" not in h["memory"]["content"] for h in hits)


async def test_a_change_of_mind_in_chinese(api):
    await remember(api, "我很喜欢喝咖啡，每天早上喝两杯")
    [result] = (await remember(api, "我现在改喝茶了"))["results"]
    assert result["outcome"] == "superseded"
    hits = await search(api, "用户喜欢喝什么？")
    assert hits[0]["memory"]["content"] == "用户现在改喝茶了"


async def test_the_agent_settles_a_change_the_rules_cannot_read_and_nothing_else_is_lost(api):
    single = (await write(api, "I am single"))["memory"]
    friend = (await write(api, "My best friend Jess is single too"))["memory"]
    news = await write(api, "My girlfriend and I just adopted a puppy")
    assert news["outcome"] == "created" and news["superseded"] == []  # the rules cannot be sure
    candidates = {c["id"]: c for c in news["candidates"]}
    assert single["id"] in candidates and friend["id"] not in candidates  # what it may update, not Jess
    assert {"content", "date", "created_at", "similarity", "type", "marked"} <= set(candidates[single["id"]])
    settled = await write(api, news["memory"]["content"], replaces=[single["id"]])
    assert settled["outcome"] == "duplicate" and [m["id"] for m in settled["superseded"]] == [single["id"]]
    assert settled["memory"]["mentions"] == news["memory"]["mentions"]  # settling is not saying it again
    history = (await api.get(f"/memories/{single['id']}/history")).json()
    assert history[-1]["event"] == "superseded" and history[-1]["details"]["by_caller"] is True
    assert set(await active(api)) == {friend["content"], news["memory"]["content"]}


async def test_replaces_naming_no_memory_of_the_tenant_is_refused_with_its_field(api):
    refused = await api.post(
        "/memories", json={"content": "I moved", "replaces": ["0" * 8 + "-0000-4000-8000-" + "0" * 12]}
    )
    assert refused.status_code == 404 and "replaces[0]" in refused.text
    batch = await api.post(
        "/memories/batch",
        json={"items": [{"content": "a"}, {"content": "b", "replaces": ["not-an-id"]}]},
    )
    assert batch.status_code == 422 and "replaces" in batch.text
    assert await active(api) == {}  # nothing written


async def test_an_unsure_change_marks_the_older_memory_which_ranks_below_and_can_be_left_out(api):
    boston = (await write(api, "My sister lives in Boston"))["memory"]
    denver = await write(api, "My sister moved to Denver")  # perhaps another sister: kept, marked
    assert denver["outcome"] == "created" and denver["superseded"] == []
    assert [c["id"] for c in denver["candidates"] if c["marked"]] == [boston["id"]]
    hits = await search(api, "where does my sister live")
    order = [h["memory"]["id"] for h in hits]
    assert order.index(denver["memory"]["id"]) < order.index(boston["id"])
    assert next(h for h in hits if h["memory"]["id"] == boston["id"])["memory"]["newer"] == denver["memory"]["id"]
    current = await search(api, "where does my sister live", filter={"current_only": True})
    assert boston["id"] not in [h["memory"]["id"] for h in current]
    listed = (await api.get("/memories", params={"current_only": "true"})).json()["items"]
    assert [m["id"] for m in listed] == [denver["memory"]["id"]]
    # forgetting the newer one lifts the mark; saying the old one again does too
    await api.post(f"/memories/{denver['memory']['id']}/forget", json={"reason": "wrong sister"})
    assert (await api.get(f"/memories/{boston['id']}")).json()["newer"] is None


# -- 5. dates in facts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "day"),
    [
        ("My flight to Tokyo is on December 20", "2026-12-20"),
        ("my rent is due on the 20th", "2026-12-20"),
        ("我12月20日飞东京", "2026-12-20"),
        ("我下周三去北京", "2026-12-16"),
        ("2027年1月3日交房租", "2027-01-03"),
    ],
)
async def test_a_date_in_a_fact_sets_when_it_happens(api, said, day):
    written = await write(api, said)
    assert written["memory"]["occurred_at"].startswith(day)


# -- 6. evidence before context ---------------------------------------------------------------


async def test_a_neighbour_with_no_evidence_of_its_own_never_outranks_the_answer(api):
    for said in ("I love coffee, I drink two cups every morning", "I am vegetarian", "My name is Tom"):
        await remember(api, said, session_id="day-1")
    await remember(api, "I switched from coffee to tea", session_id="day-1")
    hits = await search(api, "What does the user drink?", explain=True)
    answer = next(i for i, h in enumerate(hits) if "tea" in h["memory"]["content"])
    for h in hits[:answer]:
        channels = h["channels"]
        assert channels["vector"] > 0 or channels["keyword"] > 0 or channels["rule"] > 0, h


# -- the same over MCP and the CLI --------------------------------------------------------------


async def test_an_agent_over_mcp_sees_candidates_settles_with_replaces_and_reads_newer(service, engram):
    ctx, key = await engram.tenants.create(unique_tenant("words"))
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
    async with Client(streamable_http_client(f"{service.url}/t/{ctx.name}/mcp", http_client=http)) as client:
        assert "replaces" in (client.instructions or "") and "candidates" in (client.instructions or "")
        huawei = (await client.call_tool("write_memory", {"content": "我在华为上班"})).structured_content
        canteen = (await client.call_tool("write_memory", {"content": "新公司的食堂比华为好多了"})).structured_content
        assert huawei["memory"]["id"] in [c["id"] for c in canteen["candidates"]]  # the rules cannot tell
        settled = await client.call_tool(
            "write_memory", {"content": canteen["memory"]["content"], "replaces": [huawei["memory"]["id"]]}
        )
        assert [m["id"] for m in settled.structured_content["superseded"]] == [huawei["memory"]["id"]]
        sister = (await client.call_tool("write_memory", {"content": "My sister lives in Boston"})).structured_content
        await client.call_tool("write_memory", {"content": "My sister moved to Denver"})
        found = (await client.call_tool("search_memory", {"query": "my sister's city"})).structured_content["hits"]
        older = next(h for h in found if h["id"] == sister["memory"]["id"])
        assert "newer" in older and found.index(older) > 0
        current = await client.call_tool("search_memory", {"query": "my sister's city", "current_only": True})
        assert sister["memory"]["id"] not in [h["id"] for h in current.structured_content["hits"]]
        bad = await client.call_tool(
            "write_memory", {"content": "x", "replaces": ["f" * 8 + "-ffff-4fff-bfff-" + "f" * 12]}
        )
        assert bad.is_error and "replaces[0]" in bad.content[0].text


def test_the_cli_takes_replaces_and_current_only(cli_env):  # noqa: F811 (the fixture)
    engram = run_cli
    name = unique_tenant("words")
    assert engram(cli_env, "tenant", "create", name).returncode == 0
    t = ("--tenant", name)
    old = json.loads(engram(cli_env, "write", "My sister lives in Boston", *t, "--json").stdout)["memory"]["id"]
    new = json.loads(engram(cli_env, "write", "My sister moved to Denver", *t, "--json").stdout)
    assert [c["id"] for c in new["candidates"] if c["marked"]] == [old]
    everything = json.loads(engram(cli_env, "list", *t, "--json").stdout)["items"]
    current = json.loads(engram(cli_env, "list", *t, "--current-only", "--json").stdout)["items"]
    assert len(everything) == 2 and [m["id"] for m in current] == [new["memory"]["id"]]
    settled = engram(cli_env, "write", "My sister moved to Denver", *t, "--replaces", old, "--json")
    assert [m["id"] for m in json.loads(settled.stdout)["superseded"]] == [old]
    bad = engram(cli_env, "write", "x", *t, "--replaces", "nope")
    assert bad.returncode == 2 and "--replaces" in bad.stderr


async def test_restating_the_older_fact_makes_it_current_again(api):
    boston = (await write(api, "My sister lives in Boston"))["memory"]
    await write(api, "My sister moved to Denver")
    assert (await api.get(f"/memories/{boston['id']}")).json()["newer"] is not None
    again = await write(api, "My sister lives in Boston")
    assert again["outcome"] == "duplicate" and again["memory"]["newer"] is None
    history = [e["event"] for e in (await api.get(f"/memories/{boston['id']}/history")).json()]
    assert history[-2:] == ["touched", "unmarked"]


async def test_the_older_one_stays_below_even_when_it_happened_later_and_along_a_chain(api):
    # Boston was said first but dated later that day: "last time" puts the latest first, never above the newer
    boston = (await write(api, "My sister lives in Boston", occurred_at="2026-12-05T20:00:00+00:00"))["memory"]
    denver = (await write(api, "My sister moved to Denver", occurred_at="2026-12-05T08:00:00+00:00"))["memory"]
    hits = await search(api, "where did my sister live last time")
    order = [h["memory"]["id"] for h in hits]
    assert order.index(denver["id"]) < order.index(boston["id"])
    # Denver retired by a caller with a fact of another person's (no candidate of Boston's): Boston's
    # mark moves to what retired it, and Boston stays below that
    cousin = await write(api, "Actually it was my cousin who moved to Denver", replaces=[denver["id"]])
    assert boston["id"] not in [c["id"] for c in cousin["candidates"]]
    assert (await api.get(f"/memories/{boston['id']}")).json()["newer"] == cousin["memory"]["id"]
    order = [h["memory"]["id"] for h in await search(api, "who moved to Denver, where does my sister live")]
    assert denver["id"] not in order
    if boston["id"] in order and cousin["memory"]["id"] in order:
        assert order.index(cousin["memory"]["id"]) < order.index(boston["id"])
