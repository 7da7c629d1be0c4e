"""MCP round trips with the SDK's Python client over every transport, against the real service."""

import base64
import json
import os
import sys
import uuid

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import unique_tenant

TOOLS = {
    "write_memory",
    "write_memories",
    "search_memory",
    "forget_memory",
    "restore_memory",
    "get_memory",
    "list_memories",
    "update_memory",
    "memory_history",
    "remember",
    "close_scope",
}


@pytest.fixture
async def mcp_tenant(engram):
    name = unique_tenant("mcp")
    _, key = await engram.tenants.create(name)
    return name, key


def http_transport(url: str, key: str):
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}))


async def round_trip(client: Client) -> None:
    """write -> search -> forget -> search, as an agent would."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert tools["search_memory"].annotations.read_only_hint is True
    assert tools["forget_memory"].annotations.destructive_hint is True
    # A repeated write is another mention of the memory: only the other tools are idempotent.
    idempotent = {name for name, tool in tools.items() if tool.annotations.idempotent_hint}
    assert idempotent == TOOLS - {"write_memory", "write_memories", "remember"}
    assert tools["write_memory"].output_schema is not None
    assert all(t.description and "\n " not in t.description for t in tools.values())  # no source indentation

    written = await client.call_tool("write_memory", {"content": "The user's order 12345 shipped", "type": "event"})
    assert not written.is_error
    memory_id = written.structured_content["memory"]["id"]
    assert written.structured_content["outcome"] == "created"
    # Brief by default, on one line: what happened and the memory's id and words.
    assert set(written.structured_content) == {"outcome", "memory"}
    assert set(written.structured_content["memory"]) == {"id", "content", "type", "date"}
    assert "\n" not in written.content[0].text and json.loads(written.content[0].text) == written.structured_content
    again = await client.call_tool(
        "write_memory", {"content": "The user's order 12345 shipped", "type": "event", "detail": "full"}
    )
    assert again.structured_content["memory"]["memory"]["mentions"] == 2  # why a write is not idempotent

    found = await client.call_tool(
        "search_memory", {"query": "where is order 12345", "detail": "full", "explain": True}
    )
    hits = found.structured_content["hits"]
    assert hits[0]["memory"]["id"] == memory_id and hits[0]["channels"]["rule"] == 1.0
    assert found.structured_content["explanation"]["query_identifiers"] == ["12345"]
    brief = (await client.call_tool("search_memory", {"query": "where is order 12345"})).structured_content
    assert set(brief["hits"][0]) == {"id", "content", "type", "date", "score"} and brief["hits"][0]["id"] == memory_id

    remembered = await client.call_tool("remember", {"user": "Hi! I prefer aisle seats", "session_id": "s1"})
    assert [r["outcome"] for r in remembered.structured_content["results"]] == ["created"]

    forgotten = await client.call_tool("forget_memory", {"memory_id": memory_id, "reason": "test"})
    assert forgotten.structured_content["status"] == "forgotten"
    twice = await client.call_tool("forget_memory", {"memory_id": memory_id, "reason": "test"})
    assert twice.structured_content == forgotten.structured_content  # idempotent, as announced
    after = await client.call_tool("search_memory", {"query": "order 12345"})
    assert after.structured_content["hits"] == []


async def test_streamable_http_round_trip(service, mcp_tenant):
    name, key = mcp_tenant
    async with Client(http_transport(f"{service.url}/t/{name}/mcp", key)) as client:
        await round_trip(client)


async def test_streamable_http_2026_protocol_without_a_handshake(service, mcp_tenant):
    """The 2026-07-28 protocol: no initialize; the default client discovers it, a pinned one adopts it."""
    name, key = mcp_tenant
    async with Client(http_transport(f"{service.url}/t/{name}/mcp", key)) as client:
        assert client.protocol_version == "2026-07-28"
    async with Client(http_transport(f"{service.url}/t/{name}/mcp", key), mode="2026-07-28") as client:
        await round_trip(client)


async def test_streamable_http_handshake_era_client(service, mcp_tenant):
    name, key = mcp_tenant
    async with Client(http_transport(f"{service.url}/t/{name}/mcp", key), mode="legacy") as client:
        await round_trip(client)


async def test_sse_round_trip(service, mcp_tenant):
    name, key = mcp_tenant
    transport = sse_client(f"{service.url}/t/{name}/sse", headers={"Authorization": f"Bearer {key}"})
    async with Client(transport) as client:
        await round_trip(client)


async def test_stdio_round_trip(settings, mcp_tenant):
    name, _ = mcp_tenant
    env = {
        **os.environ,
        "ENGRAM_DATABASE_URL": settings.database_url.get_secret_value(),
        "ENGRAM_ENVIRONMENT": "test",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "engram", "mcp", "--tenant", name], env=env)
    async with Client(params) as client:
        await round_trip(client)


async def test_expected_failures_are_tool_errors(service, mcp_tenant):
    name, key = mcp_tenant
    async with Client(http_transport(f"{service.url}/t/{name}/mcp", key)) as client:
        missing = await client.call_tool("get_memory", {"memory_id": "00000000-0000-0000-0000-000000000000"})
        assert missing.is_error and "not found" in missing.content[0].text
        bad_id = await client.call_tool("forget_memory", {"memory_id": "nope"})
        assert bad_id.is_error
        # The SDK's own checks of the arguments say what REST says: the field, in engram's words.
        short = await client.call_tool("write_memory", {"content": ""})
        text = short.content[0].text
        assert short.is_error and "invalid_input: content: " in text and text.endswith("(field content)"), text
        assert not any(noise in text for noise in ("Arguments", "pydantic.dev", "type=", "validation error")), text
        typed = await client.call_tool("search_memory", {"query": "figs", "top_k": "many"})
        assert typed.is_error and typed.content[0].text.endswith("(field top_k)"), typed.content[0].text
        unknown = await client.call_tool("forget_memory", {"id": "00000000-0000-0000-0000-000000000000"})
        text = unknown.content[0].text
        assert unknown.is_error and "unknown argument 'id' (did you mean memory_id?)" in text, text
        assert text.endswith("(field id)"), text
        empty = await client.call_tool("write_memory", {"content": "   "})
        assert empty.is_error and "content is empty" in empty.content[0].text
        invisible = await client.call_tool("write_memory", {"content": "\u200b\u200d"})
        assert invisible.is_error and "invisible" in invisible.content[0].text
        session = await client.call_tool("write_memory", {"content": "tired", "layer": "session"})
        assert session.is_error and "session_id" in session.content[0].text
        batch = await client.call_tool("write_memories", {"items": [{"content": "a"}, {"content": "b"}]})
        assert [r["outcome"] for r in batch.structured_content["results"]] == ["created", "created"]
        for loose in ({"importance": "0.5"}, {"pinned": "yes"}, {"occurred_at": 1700000000}, {"now": "9999-12-31"}):
            refused = await client.call_tool("write_memory", {"content": "The user likes figs", **loose})
            assert refused.is_error, loose  # the same types as REST: no string numbers, no unix seconds
        for created in ("10000-01-01", "0002-01-01T00:00:00+23:59", "-1"):  # a made-up cursor: not masked
            cursor = base64.urlsafe_b64encode(f"{created}|{uuid.UUID(int=0)}".encode()).decode()
            listed = await client.call_tool("list_memories", {"cursor": cursor})
            assert listed.is_error and "invalid_input" in listed.content[0].text, listed.content[0].text
            assert "(field cursor)" in listed.content[0].text
        late = await client.call_tool("search_memory", {"query": "figs", "now": "9998-12-31T23:00:00-05:00"})
        assert late.is_error and "must lie between" in late.content[0].text  # year 9999 in UTC
        for both_or_neither in ({}, {"session_id": "s", "task_id": "t"}):
            closed = await client.call_tool("close_scope", both_or_neither)
            assert (
                closed.is_error
                and "invalid_input: give exactly one of session_id and task_id" in closed.content[0].text
            )


@pytest.mark.parametrize("path", ["mcp", "sse"])
async def test_keys_are_checked_before_any_mcp_parsing(service, engram, mcp_tenant, path):
    name, _ = mcp_tenant
    _, other_key = await engram.tenants.create(unique_tenant("mcp-other"))
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    method = "POST" if path == "mcp" else "GET"
    async with httpx.AsyncClient(base_url=service.url) as client:
        url = f"/t/{name}/{path}"
        no_key = await client.request(method, url, content=body if method == "POST" else None, headers=headers)
        assert no_key.status_code == 401 and no_key.headers["www-authenticate"].startswith("Bearer")
        cross = await client.request(
            method,
            url,
            content=body if method == "POST" else None,
            headers={**headers, "Authorization": f"Bearer {other_key}"},
        )
        assert cross.status_code == 403
        messages = await client.post(
            f"/t/{name}/messages/?session_id=x",
            content=body,
            headers={**headers, "Authorization": f"Bearer {other_key}"},
        )
        assert messages.status_code == 403


async def test_agents_get_brief_results_sized_by_the_tenant_configuration(service, mcp_tenant):
    """Brief hits by default (an agent's context pays for every byte), every field on request,
    top_k from the configuration rather than a constant of the MCP face, list filters as REST's."""
    name, key = mcp_tenant
    async with Client(http_transport(f"{service.url}/t/{name}/mcp", key)) as client:
        items = [
            {"content": f"The user went to concert number {i}", "tags": ["music"] if i < 2 else []} for i in range(7)
        ]
        await client.call_tool("write_memories", {"items": items})
        found = await client.call_tool("search_memory", {"query": "concert"})
        hits = found.structured_content["hits"]
        assert len(hits) == 5  # ENGRAM_RETRIEVAL__DEFAULT_TOP_K's default
        assert all(set(h) == {"id", "content", "type", "date", "score"} for h in hits)
        assert len(found.content[0].text) < 160 * len(hits)  # one line of JSON, no indentation: was ~900 a hit
        assert json.loads(found.content[0].text) == found.structured_content
        full = await client.call_tool("search_memory", {"query": "concert", "top_k": 7, "detail": "full"})
        assert len(full.structured_content["hits"]) == 7
        assert full.structured_content["hits"][0]["memory"]["mentions"] == 1

        page = await client.call_tool("list_memories", {"tags": ["music"], "limit": 1})
        cursor = page.structured_content["next_cursor"]
        following = await client.call_tool("list_memories", {"tags": ["music"], "cursor": cursor})
        seen = [m["content"] for m in page.structured_content["items"] + following.structured_content["items"]]
        assert sorted(seen) == ["The user went to concert number 0", "The user went to concert number 1"]
        assert "next_cursor" not in following.structured_content
        numbered = await client.call_tool("list_memories", {"contains": "NUMBER 6"})
        assert [m["content"] for m in numbered.structured_content["items"]] == ["The user went to concert number 6"]
        within = await client.call_tool("search_memory", {"query": "concert", "contains": "number 3"})
        assert [h["content"] for h in within.structured_content["hits"]] == ["The user went to concert number 3"]


async def test_resources_and_prompts_help_an_agent(service, mcp_tenant):
    """engram://memories/recent and /pinned read the tenant's memories; the prompts say what to call."""
    name, key = mcp_tenant
    async with Client(http_transport(f"{service.url}/t/{name}/mcp", key)) as client:
        await client.call_tool("write_memory", {"content": "The user is allergic to peanuts", "pinned": True})
        written = await client.call_tool(
            "write_memory", {"content": "The user watched a film", "occurred_at": "2026-01-02T20:00:00Z"}
        )
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["engram://memories/{view}"]
        listed = {str(r.uri) for r in (await client.list_resources()).resources}  # an attach menu's list
        assert listed == {"engram://memories/recent", "engram://memories/pinned"}
        recent = json.loads((await client.read_resource("engram://memories/recent")).contents[0].text)
        assert [m["content"] for m in recent["items"]] == ["The user watched a film", "The user is allergic to peanuts"]
        pinned = json.loads((await client.read_resource("engram://memories/pinned")).contents[0].text)
        assert [m["content"] for m in pinned["items"]] == ["The user is allergic to peanuts"]
        with pytest.raises(Exception, match="unknown view"):
            await client.read_resource("engram://memories/everything")

        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"recall", "remember_conversation"}
        recall = await client.get_prompt("recall", {"question": "what can I cook for the user?"})
        text = recall.messages[0].content.text
        assert "search_memory" in text and "what can I cook for the user?" in text

        # A time may be set and unset ("unknown") through MCP, as through REST.
        memory_id = written.structured_content["memory"]["id"]
        unknown = await client.call_tool("update_memory", {"memory_id": memory_id, "occurred_at": "unknown"})
        assert unknown.structured_content["occurred_at"] is None
        unpinned = await client.call_tool("list_memories", {"pinned": False})
        assert [m["id"] for m in unpinned.structured_content["items"]] == [memory_id]


@pytest.mark.parametrize("path", ["mcp", "sse"])
async def test_a_foreign_host_or_origin_is_refused_naming_the_setting(service, mcp_tenant, path):
    """DNS rebinding protection answers in the error model and says what to change."""
    name, key = mcp_tenant
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {key}",
    }
    method = "POST" if path == "mcp" else "GET"
    async with httpx.AsyncClient(base_url=service.url) as client:
        url = f"/t/{name}/{path}"
        content = body if method == "POST" else None
        foreign = await client.request(method, url, content=content, headers=headers | {"host": "evil.example"})
        assert foreign.status_code == 421
        assert foreign.json()["error"]["code"] == "misdirected"
        assert "ENGRAM_ALLOWED_HOSTS" in foreign.json()["error"]["message"]
        origin = await client.request(method, url, content=content, headers=headers | {"origin": "http://evil.example"})
        assert origin.status_code == 403 and "ENGRAM_ALLOWED_HOSTS" in origin.json()["error"]["message"]
        local = headers | {"origin": service.url}
        if method == "POST":
            passed = await client.post(url, content=body, headers=local)
            assert passed.json()["jsonrpc"] == "2.0", passed.text  # past the check: MCP answers (no session yet)


async def test_search_size_comes_from_the_configuration(settings, mcp_tenant):
    """No face has a top_k of its own: ENGRAM_RETRIEVAL__DEFAULT_TOP_K sizes an agent's search."""
    name, _ = mcp_tenant
    env = {
        **os.environ,
        "ENGRAM_DATABASE_URL": settings.database_url.get_secret_value(),
        "ENGRAM_ENVIRONMENT": "test",
        "ENGRAM_RETRIEVAL__DEFAULT_TOP_K": "7",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "engram", "mcp", "--tenant", name], env=env)
    async with Client(params) as client:
        items = [{"content": f"The user planted tree number {i} in the garden"} for i in range(9)]
        await client.call_tool("write_memories", {"items": items})
        found = await client.call_tool("search_memory", {"query": "trees planted in the garden"})
        assert len(found.structured_content["hits"]) == 7
