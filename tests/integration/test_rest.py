"""REST against the real service (uvicorn on a port) and the real database."""

import base64
import re
import uuid

import httpx
import pytest

from tests.conftest import unique_tenant


@pytest.fixture
async def api(service, engram):
    """(client, tenant name, key) for a fresh tenant."""
    name = unique_tenant("rest")
    _, key = await engram.tenants.create(name)
    async with httpx.AsyncClient(base_url=service.url, headers={"Authorization": f"Bearer {key}"}) as client:
        yield client, name, key


async def test_health_readiness_and_openapi(service):
    async with httpx.AsyncClient(base_url=service.url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "ready" and set(ready["second_vectors"]) == {"pending", "lag_seconds", "model_loaded"}
        spec = (await client.get("/openapi.json")).json()
    assert "/t/{tenant}/v1/search" in spec["paths"] and "/t/{tenant}/v1/memories" in spec["paths"]


async def test_the_services_address_sends_people_to_the_browser_and_the_docs(service):
    async with httpx.AsyncClient(base_url=service.url) as client:
        page = await client.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert 'href="/t/default/ui"' in page.text and 'href="/docs"' in page.text
        links = (await client.get("/")).json()
        assert links["memory_browser"] == "/t/default/ui" and links["api_docs"] == "/docs"


async def test_the_docs_show_every_placeholder_instead_of_swallowing_it_as_html(service):
    """Swagger UI renders descriptions as Markdown: a bare <key> is an HTML tag, and vanishes."""
    async with httpx.AsyncClient(base_url=service.url) as client:
        spec = (await client.get("/openapi.json")).json()
    swallowed = []

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "description" and isinstance(value, str):
                    outside_code = value.split("`")[::2]  # the text between code spans
                    swallowed.extend(
                        (path, tag) for part in outside_code for tag in re.findall(r"<[A-Za-z][^>]*>", part)
                    )
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for item in node:
                walk(item, path)

    walk(spec, "")
    assert swallowed == []
    assert "`Authorization: Bearer <tenant API key>`" in spec["info"]["description"]


async def test_write_search_get_forget_restore_purge(api):
    client, name, _ = api
    base = f"/t/{name}/v1"
    created = await client.post(f"{base}/memories", json={"content": "用户偏好顺丰快递", "type": "preference"})
    assert created.status_code == 201
    memory = created.json()["memory"]
    duplicate = await client.post(f"{base}/memories", json={"content": "用户偏好顺丰快递"})
    assert duplicate.status_code == 200 and duplicate.json()["outcome"] == "duplicate"

    found = await client.post(f"{base}/search", json={"query": "顺丰", "explain": True})
    body = found.json()
    assert body["hits"][0]["memory"]["id"] == memory["id"]
    assert set(body["explanation"]["candidates"]) == {"vector", "retrieval", "keyword", "rule", "context", "time"}

    # Explaining is not a use; stating it twice is two mentions.
    stored = (await client.get(f"{base}/memories/{memory['id']}")).json()
    assert (stored["mentions"], stored["access_count"]) == (2, 0)
    await client.post(f"{base}/search", json={"query": "顺丰"})
    assert (await client.get(f"{base}/memories/{memory['id']}")).json()["access_count"] == 1
    forgotten = await client.post(f"{base}/memories/{memory['id']}/forget", json={"reason": "asked"})
    assert forgotten.json()["status"] == "forgotten"
    listed = await client.get(f"{base}/memories", params={"status": "forgotten"})
    assert [m["id"] for m in listed.json()["items"]] == [memory["id"]]
    assert (await client.post(f"{base}/memories/{memory['id']}/restore")).json()["status"] == "active"
    assert (await client.delete(f"{base}/memories/{memory['id']}")).status_code == 409
    await client.post(f"{base}/memories/{memory['id']}/forget")
    assert (await client.delete(f"{base}/memories/{memory['id']}")).status_code == 204
    assert (await client.get(f"{base}/memories/{memory['id']}")).status_code == 404
    history = (await client.get(f"{base}/memories/{memory['id']}/history")).json()
    assert [e["event"] for e in history] == ["written", "touched", "forgotten", "restored", "forgotten", "purged"]


async def test_batch_write_maps_external_ids(api):
    client, name, _ = api
    items = [{"content": f"batch fact {i}", "external_id": f"e{i}", "source": "import"} for i in range(3)]
    response = await client.post(f"/t/{name}/v1/memories/batch", json={"items": items})
    assert response.status_code == 200
    assert [r["external_id"] for r in response.json()["results"]] == ["e0", "e1", "e2"]


async def test_patch_updates_and_reembeds(api):
    client, name, _ = api
    base = f"/t/{name}/v1"
    memory = (await client.post(f"{base}/memories", json={"content": "favourite colour is blue"})).json()["memory"]
    patched = await client.patch(f"{base}/memories/{memory['id']}", json={"content": "favourite colour is green"})
    assert patched.status_code == 200 and patched.json()["content"] == "favourite colour is green"
    hits = (await client.post(f"{base}/search", json={"query": "green"})).json()["hits"]
    assert hits[0]["memory"]["id"] == memory["id"]


def made_up_cursor(created: str) -> str:
    return base64.urlsafe_b64encode(f"{created}|{uuid.UUID(int=0)}".encode()).decode()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/memories", {"content": ""}),
        ("post", "/memories", {"content": "x", "importance": 2}),
        ("post", "/memories", {"content": "x", "type": "opinion"}),
        ("post", "/memories", {"content": "x", "unknown": 1}),
        ("post", "/memories", {"content": "tired", "layer": "session"}),
        ("post", "/memories/batch", {"items": []}),
        ("post", "/search", {"query": ""}),
        ("post", "/search", {"query": "x", "top_k": 0}),
        ("get", "/memories/not-a-uuid", None),
        ("get", "/memories?cursor=bad", None),
        ("get", f"/memories?cursor={made_up_cursor('0001-01-01T00:00:00')}", None),  # year 1, no time zone
        ("get", f"/memories?cursor={made_up_cursor('9999-12-31T23:59:59-23:00')}", None),  # past any arithmetic
        ("patch", "/memories/00000000-0000-0000-0000-000000000000", {}),
    ],
)
async def test_bad_input_is_a_4xx_with_a_message(api, method, path, body):
    client, name, _ = api
    response = await client.request(method, f"/t/{name}/v1{path}", json=body)
    assert 400 <= response.status_code < 500
    error = response.json()["error"]
    assert error["code"] and error["message"]


async def test_missing_wrong_and_cross_tenant_keys(api, engram, service):
    client, name, _ = api
    other, other_key = await engram.tenants.create(unique_tenant("other"))
    async with httpx.AsyncClient(base_url=service.url) as anonymous:
        assert (await anonymous.post(f"/t/{name}/v1/search", json={"query": "x"})).status_code == 401
        bad = {"Authorization": f"Bearer ek.{name}.wrong"}
        assert (await anonymous.post(f"/t/{name}/v1/search", json={"query": "x"}, headers=bad)).status_code == 401
        cross = {"Authorization": f"Bearer {other_key}"}
        response = await anonymous.post(f"/t/{name}/v1/memories", json={"content": "leak"}, headers=cross)
        assert response.status_code == 403
    assert (await client.get(f"/t/{other.name}/v1/memories")).status_code == 403
    assert (await client.get("/t/no-such-tenant/v1/memories")).status_code in (401, 403)


async def test_remember_close_forgetting_and_consolidation_endpoints(api):
    client, name, _ = api
    base = f"/t/{name}/v1"
    turn = {"user": "你好！我对花生过敏。提醒我明天买牛奶", "session_id": "s-9", "now": "2026-12-03T09:00:00+08:00"}
    remembered = await client.post(f"{base}/remember", json=turn)
    assert remembered.status_code == 200
    body = remembered.json()
    assert body["judge"] == "rules" and body["judgement"]["should_write"]
    assert [(r["memory"]["content"], r["memory"]["type"]) for r in body["results"]] == [
        ("用户对花生过敏", "preference"),
        ("提醒用户2026年12月4日买牛奶", "task"),  # "明天" from when it was said
    ]
    assert body["results"][1]["memory"]["occurred_at"].startswith("2026-12-04")
    note = {"content": "We are comparing two laptops", "layer": "session", "session_id": "s-9"}
    await client.post(f"{base}/memories", json=note)
    closed = await client.post(f"{base}/sessions/s-9/close")
    assert [m["content"] for m in closed.json()["closed"]] == ["We are comparing two laptops"]
    preview = await client.post(f"{base}/forgetting/run", params={"dry_run": True})
    assert preview.json()["dry_run"] is True and preview.json()["candidates"] == []
    consolidated = await client.post(f"{base}/consolidation/run", params={"dry_run": True})
    assert consolidated.json() == {"dry_run": True, "merged": [], "derived": []}
    assert (await client.post(f"{base}/remember", json={"user": ""})).status_code == 422


async def test_counts_and_the_versions_of_a_changed_fact(api):
    client, name, _ = api
    base = f"/t/{name}/v1"
    old = (
        await client.post(f"{base}/memories", json={"content": "The user likes coffee", "type": "preference"})
    ).json()
    new = (
        await client.post(
            f"{base}/memories", json={"content": "The user switched from coffee to tea", "type": "preference"}
        )
    ).json()
    assert new["outcome"] == "superseded"
    await client.post(
        f"{base}/memories", json={"content": "Buy milk", "type": "task", "layer": "session", "session_id": "s"}
    )
    counts = (await client.get(f"{base}/stats")).json()
    assert counts["by_type"]["preference"] == 1 and counts["by_type"]["task"] == 1
    assert counts["by_layer"] == {"long_term": 1, "session": 1, "task": 0}
    assert counts["by_status"]["superseded"] == 1
    for either in (old["memory"]["id"], new["memory"]["id"]):
        versions = (await client.get(f"{base}/memories/{either}/versions")).json()
        assert [v["id"] for v in versions] == [old["memory"]["id"], new["memory"]["id"]]
    assert (await client.get(f"{base}/memories/00000000-0000-0000-0000-000000000000/versions")).status_code == 404


async def test_the_ui_page_is_plain_static_and_locked_down(api):
    client, name, _ = api
    page = await client.get(f"/t/{name}/ui", headers={"Authorization": ""})
    assert page.status_code == 200 and '<script type="module" src="/ui/assets/app.js">' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert (await client.get("/ui/assets/app.js")).status_code == 200
    assert (await client.get("/t/Not_A_Tenant/ui")).status_code == 422


async def test_the_api_reference_pages_need_no_internet(service):
    """/docs and /redoc load every script and style from this service (no CDN)."""
    import re

    async with httpx.AsyncClient(base_url=service.url) as client:
        for page in ("/docs", "/redoc"):
            html = (await client.get(page)).text
            urls = re.findall(r"""(?:src|href)=["']([^"']+)|(?:url|spec-url)\s*[:=]\s*["']([^"']+)""", html)
            found = [a or b for a, b in urls]
            assert found and all(u.startswith("/") for u in found), (page, found)
            for url in found:
                response = await client.get(url)
                assert response.status_code == 200 and response.content, url


async def test_list_filters_pinned_memories(api):
    client, name, _ = api
    base = f"/t/{name}/v1"
    kept = (await client.post(f"{base}/memories", json={"content": "Allergic to shellfish", "pinned": True})).json()
    other = (await client.post(f"{base}/memories", json={"content": "Likes jazz"})).json()
    pinned = (await client.get(f"{base}/memories", params={"pinned": "true"})).json()["items"]
    unpinned = (await client.get(f"{base}/memories", params={"pinned": "false"})).json()["items"]
    assert [m["id"] for m in pinned] == [kept["memory"]["id"]]
    assert [m["id"] for m in unpinned] == [other["memory"]["id"]]


async def test_text_filter_finds_any_case_and_language_and_takes_wildcards_literally(api):
    client, name, _ = api
    base = f"/t/{name}/v1"
    items = [
        {"content": "The user learns the PIANO on Tuesdays"},
        {"content": "用户在杭州学钢琴"},
        {"content": "Discount code 50%_OFF expires Friday"},
        {"content": "Discount code 50 OFF is old"},
    ]
    await client.post(f"{base}/memories/batch", json={"items": items})

    async def listed(text: str) -> list[str]:
        page = await client.get(f"{base}/memories", params={"contains": text})
        assert page.status_code == 200, page.text
        return sorted(m["content"] for m in page.json()["items"])

    assert await listed("piano") == ["The user learns the PIANO on Tuesdays"]
    assert await listed("杭州") == ["用户在杭州学钢琴"]
    assert await listed("50%_") == ["Discount code 50%_OFF expires Friday"]  # not LIKE wildcards
    assert await listed("no memory says this") == []
    searched = await client.post(f"{base}/search", json={"query": "discount code", "filter": {"contains": "friday"}})
    assert [h["memory"]["content"] for h in searched.json()["hits"]] == ["Discount code 50%_OFF expires Friday"]
    for bad in ("", "x" * 201):
        refused = await client.get(f"{base}/memories", params={"contains": bad})
        assert refused.status_code == 422 and refused.json()["error"]["field"] == "contains", refused.text


async def test_timeline_counts_what_happened_when_with_the_list_filters(api):
    client, name, _ = api
    base = f"/t/{name}/v1"
    items = [
        {"content": "Moved to Hangzhou", "type": "event", "occurred_at": "2026-03-14T23:30:00-05:00"},
        {"content": "Started piano lessons", "type": "event", "occurred_at": "2026-03-16T09:00:00Z"},
        {"content": "Likes the piano teacher", "type": "preference", "occurred_at": "2026-03-17T09:00:00Z"},
        {"content": "Book the dentist", "type": "task", "occurred_at": "2026-09-09T10:00:00Z"},
    ]
    written = (await client.post(f"{base}/memories/batch", json={"items": items})).json()["results"]
    weekly = (await client.get(f"{base}/memories/timeline")).json()
    assert weekly["bucket"] == "week" and weekly["total"] == 4
    # 23:30 in New York on the 14th is the 15th in UTC: the week of Monday 9 March still.
    assert [(p["start"][:10], p["counts"]) for p in weekly["points"]] == [
        ("2026-03-09", {"event": 1}),
        ("2026-03-16", {"event": 1, "preference": 1}),
        ("2026-09-07", {"task": 1}),
    ]
    piano = (await client.get(f"{base}/memories/timeline", params={"contains": "piano", "bucket": "month"})).json()
    assert [(p["start"][:10], p["counts"]) for p in piano["points"]] == [("2026-03-01", {"event": 1, "preference": 1})]
    await client.post(f"{base}/memories/{written[3]['memory']['id']}/forget", json={})
    active = (await client.get(f"{base}/memories/timeline")).json()
    assert active["total"] == 3 and active["bucket"] == "day"  # what is left spans a few days
    forgotten = (await client.get(f"{base}/memories/timeline", params={"status": "forgotten"})).json()
    assert forgotten["total"] == 1
    refused = await client.get(f"{base}/memories/timeline", params={"bucket": "fortnight"})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "bucket"


async def test_oauth_seekers_are_told_to_send_a_key(service):
    """A client refused with a 401 looks for OAuth; what it finds says what to send instead."""
    async with httpx.AsyncClient(base_url=service.url) as client:
        for method, path in [
            ("GET", "/.well-known/oauth-protected-resource/t/default/mcp"),
            ("GET", "/.well-known/oauth-authorization-server"),
            ("POST", "/register"),
        ]:
            answer = await client.request(method, path, json={} if method == "POST" else None)
            assert answer.status_code == 404, path
            assert "Authorization: Bearer <key>" in answer.json()["error"]["message"], path


async def test_a_purge_leaves_no_text_of_the_memory_anywhere(api, engram):
    """Purged: its text before an edit, the forget reason, and its text quoted in the history of
    the memory it replaced are gone too; the events stay, with their ids."""
    client, name, _ = api
    base = f"/t/{name}/v1"
    old = (await client.post(f"{base}/memories", json={"content": "The user lives in Lyon"})).json()["memory"]
    await client.patch(f"{base}/memories/{old['id']}", json={"content": "The user lives in Lyon, near Croix-Rousse"})
    new = (
        await client.post(f"{base}/memories", json={"content": "The user moved to Nantes", "replaces": [old["id"]]})
    ).json()["memory"]
    for memory, reason in ((new, "private: Nantes"), (old, "private: Croix-Rousse")):
        await client.post(f"{base}/memories/{memory['id']}/forget", json={"reason": reason})
        assert (await client.delete(f"{base}/memories/{memory['id']}")).status_code == 204
        history = (await client.get(f"{base}/memories/{memory['id']}/history")).json()
        assert history[-1]["event"] == "purged"
        if memory is new:  # the memory it replaced no longer quotes it
            assert "Nantes" not in (await client.get(f"{base}/memories/{old['id']}/history")).text
    for memory in (old, new):
        served = (await client.get(f"{base}/memories/{memory['id']}/history")).text
        assert "Lyon" not in served and "Nantes" not in served and "Croix-Rousse" not in served
    ctx = await engram.tenants.resolve(name)
    async with engram.pool.acquire() as conn:
        await conn.execute("CHECKPOINT")
        left = await conn.fetchval(
            f"""SELECT count(*) FROM {ctx.schema}.memory_history h
                WHERE h.content ~ 'Lyon|Nantes|Croix' OR h.details::text ~ 'Lyon|Nantes|Croix'"""
        )
    assert left == 0
    superseded = next(
        e for e in (await client.get(f"{base}/memories/{old['id']}/history")).json() if e["event"] == "superseded"
    )
    assert superseded["details"]["superseded_by"] == new["id"]  # the event and its link stay
