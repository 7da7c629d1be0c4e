"""The boundary: every bad input a clear 4xx naming the field, one JSON error model, nothing stored
that would poison a tenant, bodies capped before they are read."""

import json

import httpx
import pytest

from tests.conftest import unique_tenant


@pytest.fixture
async def api(service, engram):
    ctx, key = await engram.tenants.create(unique_tenant("edge"))
    async with httpx.AsyncClient(
        base_url=f"{service.url}/t/{ctx.name}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    ) as client:
        yield client


def error_of(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) <= {"code", "message", "field", "index"} and error["message"]
    return error


async def post_raw(client: httpx.AsyncClient, path: str, text: str) -> httpx.Response:
    """A JSON body as text, so escapes no encoder would write (a lone surrogate) reach the server."""
    return await client.post(path, content=text.encode(), headers={"Content-Type": "application/json"})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"content": "tea\\u0000time"}', "content"),
        ('{"content": "tea", "tags": ["a\\u0000"]}', "tags[0]"),
        ('{"content": "tea", "session_id": "s\\u0000"}', "session_id"),
        ('{"content": "bad \\ud800 surrogate"}', "content"),
        ('{"content": "tea", "metadata": {"k\\u0000": 1}}', "metadata"),
        ('{"content": "tea", "occurred_at": "9999-12-31T23:00:00-12:00"}', "occurred_at"),
        ('{"content": "tea", "now": "0001-01-02T00:00:00Z"}', "now"),
    ],
)
async def test_unstorable_input_is_refused_with_its_field(api, body, field):
    error = error_of(await post_raw(api, "/memories", body), 422)
    assert error["code"] == "invalid_input" and error["field"] == field


async def test_deep_or_huge_metadata_is_refused_and_the_tenant_stays_usable(api):
    deep: dict = {}
    node = deep
    for _ in range(300):
        node["a"] = {}
        node = node["a"]
    assert error_of(await api.post("/memories", json={"content": "x", "metadata": deep}), 422)["field"] == "metadata"
    huge = {"blob": "x" * (70 * 1024)}
    assert error_of(await api.post("/memories", json={"content": "y", "metadata": huge}), 422)["field"] == "metadata"
    items = [{"content": f"fine {i}"} for i in range(5)] + [{"content": "bad", "metadata": deep}]
    batch = error_of(await api.post("/memories/batch", json={"items": items}), 422)
    assert batch["index"] == 5 and batch["field"].startswith("items[5].metadata")
    assert (await api.get("/memories")).json()["items"] == []  # nothing of the refused batch was stored
    assert (await api.post("/search", json={"query": "fine"})).status_code == 200


async def test_a_batch_error_names_the_item(api):
    items = [{"content": "one"}, {"content": "   "}, {"content": "three"}]
    error = error_of(await api.post("/memories/batch", json={"items": items}), 422)
    assert (error["index"], error["field"]) == (1, "items[1].content")


async def test_query_and_path_values_are_checked_too(api):
    assert error_of(await api.get("/memories", params={"session_id": "a\x00b"}), 422)["field"] == "session_id"
    assert error_of(await api.post("/search", json={"query": "tea\u0000"}), 422)["field"] == "query"
    error = error_of(await api.post("/sessions/s%00x/close"), 422)
    assert error["field"] == "session_id"
    memory = (await api.post("/memories", json={"content": "to forget"})).json()["memory"]
    forget = await post_raw(api, f"/memories/{memory['id']}/forget", '{"reason": "x\\u0000"}')
    assert error_of(forget, 422)["field"] == "reason"


async def test_a_long_unbroken_run_is_stored_and_found(api):
    token = "a1b2c3" * 700  # 4,200 characters without a break: a hex blob, a URL's token
    created = await api.post("/memories", json={"content": f"the build artefact is {token}"})
    assert created.status_code == 201, created.text
    assert (await api.post("/search", json={"query": token[:3000]})).status_code == 200
    patched = await api.patch(f"/memories/{created.json()['memory']['id']}", json={"content": f"moved to {token}x"})
    assert patched.status_code == 200, patched.text


async def test_null_for_a_required_field_is_a_422(api):
    memory = (await api.post("/memories", json={"content": "I like tea"})).json()["memory"]
    error = error_of(await api.patch(f"/memories/{memory['id']}", json={"importance": None}), 422)
    assert error["field"] == "importance"


async def test_repeats_answer_200_and_new_memories_201(api):
    assert (await api.post("/memories", json={"content": "I like americano"})).status_code == 201
    for content, outcome in [
        ("I like americano", "duplicate"),
        ("I really like americano", "touched"),
        ("I like americano without sugar", "merged"),
    ]:
        response = await api.post("/memories", json={"content": content})
        assert (response.status_code, response.json()["outcome"]) == (200, outcome)


async def test_errors_of_routes_and_keys_share_the_model(service, api):
    assert error_of(await api.get("/no-such-route"), 404)["code"] == "not_found"
    async with httpx.AsyncClient(base_url=service.url) as anonymous:
        assert error_of(await anonymous.get(f"{api.base_url.path}/memories"), 401)["code"] == "unauthorized"
        too_big = await anonymous.post(f"{api.base_url.path}/memories", content=b"{" + b" " * (5 * 1024 * 1024) + b"}")
        assert error_of(too_big, 413)["code"] == "too_large"  # refused before the key is even looked at


async def test_the_openapi_documents_the_error_statuses(service):
    async with httpx.AsyncClient(base_url=service.url) as client:
        spec = (await client.get("/openapi.json")).json()
    write = spec["paths"]["/t/{tenant}/v1/memories"]["post"]["responses"]
    assert {"401", "403", "413", "422", "503"} <= set(write)
    assert json.dumps(write["422"]).count("ErrorBody") >= 1


async def test_a_batch_never_conflicts_with_itself(api):
    """The same line in two cases on two days, and again in a later batch: never a 409."""
    batch = {
        "items": [
            {"content": "Continue", "occurred_at": "2023-05-22T18:23:00Z"},
            {"content": "continue", "occurred_at": "2023-05-29T16:34:00Z"},
            {"content": "CONTINUE ", "occurred_at": "2023-05-29T16:35:00Z"},
        ]
    }
    for _ in range(2):
        response = await api.post("/memories/batch", json=batch)
        assert response.status_code in (200, 201), response.text
    turns = {"items": [{**item, "kind": "turn", "session_id": "c1"} for item in batch["items"]]}
    for _ in range(2):
        response = await api.post("/memories/batch", json=turns)
        assert response.status_code in (200, 201), response.text
