"""The boundary: every bad input a clear 4xx naming the field, one JSON error model, nothing stored
that would poison a tenant, bodies capped before they are read."""

import base64
import json
import re
import uuid
from datetime import datetime

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import tenant_api, unique_tenant


@pytest.fixture
async def api(service, engram):
    ctx, key = await engram.tenants.create(unique_tenant("edge"))
    async with tenant_api(service, ctx.name, key) as client:
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


INVISIBLE = ["\u200b", "\u200b\u200c\u200d", " \x01\x02 ", "\ufeff", "\u2060\u00ad"]
# ...and the other characters Unicode says are drawn as nothing: these were stored, and each
# written after the first was counted as a mention of it.
INVISIBLE += ["\u3164", "\u034f", "\ufe0f", "\U000e0001", "\u2800", "\u115f\u1160", "\uffa0\u17b4"]


@pytest.mark.parametrize("invisible", INVISIBLE)
async def test_content_of_only_invisible_characters_is_refused_and_touches_nothing(api, invisible):
    stored = (await api.post("/memories", json={"content": "The user likes green tea"})).json()["memory"]
    assert error_of(await api.post("/memories", json={"content": invisible}), 422)["field"] == "content"
    batch = error_of(
        await api.post("/memories/batch", json={"items": [{"content": "ok"}, {"content": invisible}]}), 422
    )
    assert batch["field"] == "items[1].content"
    edit = await api.patch(f"/memories/{stored['id']}", json={"content": invisible})
    assert error_of(edit, 422)["field"] == "content"
    [only] = (await api.get("/memories")).json()["items"]
    assert (only["content"], only["mentions"]) == ("The user likes green tea", 1)


async def test_no_text_is_a_mention_of_another_by_what_cannot_be_seen(api, engram):
    """Invisible texts are refused as empty ones are, over every way in; texts of no word are one
    fact only if they read alike; a memory of nothing visible (stored before such content was
    refused) is the mention of no new text."""
    for content in ["The user likes green tea", "."]:
        assert (await api.post("/memories", json={"content": content})).status_code == 201
    for invisible in INVISIBLE:
        assert error_of(await api.post("/memories", json={"content": invisible}), 422)["field"] == "content"
        mem0 = await api.post("/import", content=json.dumps({"id": "x", "memory": invisible}).encode())
        assert error_of(mem0, 422)["field"] == "line 1"  # as an empty one is
    for wordless in ["a", "!", "a\u200b\u200b"]:
        written = await api.post("/memories", json={"content": wordless})
        assert written.status_code in (200, 201), written.text
        assert written.json()["memory"]["content"] in ("a", "!"), written.json()  # only "a" again is "a"
    legacy = (await api.post("/memories", json={"content": "b"})).json()["memory"]
    async with engram.pool.acquire() as conn:  # as stored before invisible content was refused
        schema = (await engram.tenants.resolve(api.base_url.path.split("/")[2])).schema
        await conn.execute(
            f"UPDATE {schema}.memories SET content = $1 WHERE id = $2", "\u200b", uuid.UUID(legacy["id"])
        )
    again = await api.post("/memories", json={"content": "b\u2060"})  # embeds as "b" did: cosine 1.0
    assert (again.status_code, again.json()["outcome"]) == (201, "created"), again.text
    mentions = {m["content"]: m["mentions"] for m in (await api.get("/memories")).json()["items"]}
    assert mentions == {
        "The user likes green tea": 1,
        ".": 1,
        "a": 2,
        "!": 1,
        "\u200b": 1,
        "b\u2060": 1,
    }, mentions


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
    memories = f"{api.base_url.path}memories"  # the base path ends with a slash
    async with httpx.AsyncClient(base_url=service.url) as anonymous:
        assert error_of(await anonymous.get(memories), 401)["code"] == "unauthorized"
        too_big = await anonymous.post(memories, content=b"{" + b" " * (5 * 1024 * 1024) + b"}")
        assert error_of(too_big, 413)["code"] == "too_large"  # refused before the key is even looked at


async def test_a_streamed_body_is_cut_off_at_the_limit_too(api):
    """Without a Content-Length (chunked), the body is counted as it arrives."""

    async def chunks():
        yield b'{"content": "'
        for _ in range(5 * 1024):
            yield b"x" * 1024
        yield b'"}'

    assert error_of(await api.post("/memories", content=chunks()), 413)["code"] == "too_large"
    assert (await api.get("/memories")).json()["items"] == []  # nothing was stored


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


# Found by the fuzzer (test_fuzz_api.py): each a class of answer that broke the published contract.


async def test_a_method_a_path_lacks_is_a_405_listing_every_method_it_has(api):
    for method, path, allowed in [
        ("TRACE", "/memories", {"GET", "POST"}),  # not swallowed by the MCP mount: a 405, not a 404
        ("OPTIONS", "/memories", {"GET", "POST"}),  # every route of the path, not the first one's
        ("PATCH", "/memories/batch", {"POST"}),  # "batch" is no memory id: not a 422 about memory_id
        ("PUT", "/memories/00000000-0000-0000-0000-000000000000", {"GET", "PATCH", "DELETE"}),
    ]:
        response = await api.request(method, path)
        assert error_of(response, 405)["code"] == "method_not_allowed"
        assert set(response.headers["allow"].split(", ")) == allowed, (method, path)
    assert error_of(await api.get("/v1-typo/memories"), 404)["message"].startswith("no such path")
    # A memory's path with a malformed id: the id is at fault, not the path.
    for method, path in [("GET", "/memories/not-a-uuid"), ("POST", "/memories/12345/forget"), ("GET", "/memories/x/")]:
        error = error_of(await api.request(method, path), 422)
        assert (error["code"], error["field"]) == ("invalid_input", "memory_id"), (method, path)
    assert error_of(await api.get("/memories/x/elsewhere"), 404)["message"].startswith("no such path")


async def test_a_body_that_is_not_json_names_the_body_and_where_it_broke(api):
    error = error_of(await post_raw(api, "/memories", '{"content": "tea",, }'), 422)
    assert (error["field"], error.get("index")) == ("body", None)
    assert error["message"] == (
        "the body is not valid JSON at character 18: Expecting property name enclosed in double quotes"
    )
    batch = error_of(await post_raw(api, "/memories/batch", '{"items": [{"content": "a"}, {"content": ]}'), 422)
    assert (batch["field"], batch.get("index")) == ("body", None)  # a character offset is no batch item


@pytest.mark.parametrize("query", ["   ", r"\t\n", r"\u200b", r"\u3000"])
async def test_a_blank_query_is_refused_rather_than_answered_with_noise(api, query):
    await api.post("/memories", json={"content": "The user likes figs"})
    error = error_of(await post_raw(api, "/search", f'{{"query": "{query}"}}'), 422)
    assert (error["code"], error["field"]) == ("invalid_input", "query")


@pytest.mark.parametrize("importance", [0.6, 0.1, 0.3, 0.7, 0.33, 0.123456, 0.0, 1.0])
async def test_importance_reads_back_as_it_was_set(api, importance):
    written = await api.post("/memories", json={"content": f"The user rates {importance}", "importance": importance})
    memory = written.json()["memory"]
    assert memory["importance"] == importance
    assert (await api.get(f"/memories/{memory['id']}")).json()["importance"] == importance
    listed = (await api.get("/memories")).json()["items"]
    assert [m["importance"] for m in listed] == [importance]


async def test_an_instant_is_iso_8601_text_never_a_number(api):
    assert error_of(await api.get("/memories", params={"occurred_before": "0.5"}), 422)["field"] == "occurred_before"
    assert error_of(await api.get("/memories", params={"created_after": "0001-01-01"}), 422)["field"] == "created_after"
    created = await api.post("/memories", json={"content": "tea at noon", "occurred_at": 1700000000})
    assert error_of(created, 422)["field"] == "occurred_at"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/search", {"query": "tea", "explain": 0}, "explain"),
        ("/search", {"query": "tea", "top_k": "5"}, "top_k"),
        ("/search", {"query": "tea", "top_k": True}, "top_k"),
        ("/memories", {"content": "tea", "pinned": "yes"}, "pinned"),
        ("/memories", {"content": "tea", "importance": "0.5"}, "importance"),
        ("/memories", {"content": "tea", "importance": False}, "importance"),
    ],
)
async def test_a_json_scalar_of_another_type_is_refused(api, path, body, field):
    """Lax parsing would take 0 for false, "5" for 5, "yes" for true: the schema says otherwise."""
    assert error_of(await api.post(path, json=body), 422)["field"] == field


async def test_a_json_integer_may_be_written_with_a_point(api):
    response = await api.post("/search", json={"query": "tea", "top_k": 3.0})
    assert response.status_code == 200, response.text


async def test_an_unknown_query_parameter_is_refused_not_ignored(api):
    (await api.post("/memories", json={"content": "I like green tea", "importance": 0})).raise_for_status()
    typo = await api.post("/forgetting/run", params={"dryrun": "true"})  # ignored, it would forget for real
    assert error_of(typo, 422)["field"] == "dryrun"
    assert error_of(await api.post("/consolidation/run?=false"), 422)["field"] == ""
    assert error_of(await api.get("/memories", params={"limit": 5, "sesion_id": "s"}), 422)["field"] == "sesion_id"
    assert len((await api.get("/memories")).json()["items"]) == 1


async def test_a_body_that_cannot_be_read_is_a_422_naming_the_body(api):
    unreadable = await api.post("/remember", content=b"\xff", headers={"Content-Type": "application/json"})
    error = error_of(unreadable, 422)  # not UTF-8: it was a 400, which the OpenAPI does not document
    assert (error["code"], error["field"]) == ("invalid_input", "body")


async def test_the_openapi_says_what_the_boundary_refuses(service):
    async with httpx.AsyncClient(base_url=service.url) as client:
        spec = (await client.get("/openapi.json")).json()
    published = json.dumps(spec)
    # Bounds as JSON Schema words (minimum...), not pydantic's (ge...), which a validator ignores.
    assert not [word for word in ('"ge":', '"le":', '"gt":', '"lt":') if word in published]
    schemas = spec["components"]["schemas"]
    patch = schemas["MemoryPatch"]
    assert patch["minProperties"] == 1  # {} changes nothing: refused
    nullable = {name for name, prop in patch["properties"].items() if "null" in json.dumps(prop)}
    assert nullable == {"occurred_at"}  # a null for any other field is refused, so not offered
    new = schemas["NewMemory"]
    assert {"task_id", "session_id"} == {rule["then"]["required"][0] for rule in new["allOf"]}
    content = re.compile(new["properties"]["content"]["pattern"])
    for text in ["tea", " tea\n", "\x1e", " \u3000\t", "tea\x00", ""]:
        assert (content.search(text) is not None) == (bool(text.strip()) and "\x00" not in text), repr(text)
    instant = re.compile(new["properties"]["occurred_at"]["anyOf"][0]["pattern"])
    for year in ["0001", "0002", "2026", "9998", "9999"]:
        assert (instant.match(f"{year}-06-17T18:00:00Z") is not None) == ("0002" <= year <= "9998"), year


async def test_an_import_may_stream_a_body_over_the_request_limit(api):
    """6 MB of mem0 records in one import (over the 4 MB request limit, under the import limit),
    read as they arrive; the same bytes as an ordinary request are refused."""
    record = json.dumps({"id": "x", "memory": "filler " + "y" * 2000}).encode() + b"\n"
    lines = [json.dumps({"id": f"r{i}", "memory": f"fact number {i} " + "z" * 3000}).encode() + b"\n" for i in range(2)]

    async def body():
        yield lines[0]
        for _ in range(6 * 1024 * 1024 // len(record)):
            yield record  # the same record again: imported once
        yield lines[1]

    imported = await api.post("/import", content=body())
    assert imported.status_code == 200, imported.text
    assert (imported.json()["imported"], imported.json()["already_present"]) == (3, imported.json()["read"] - 3)
    assert error_of(await api.post("/memories", content=body()), 413)["code"] == "too_large"


def made_up_cursor(created: str) -> str:
    return base64.urlsafe_b64encode(f"{created}|{uuid.UUID(int=0)}".encode()).decode()


@pytest.mark.parametrize(
    "created",
    [
        "10000-01-01T00:00:00Z",  # past what datetime holds
        "0000-01-01T00:00:00Z",
        "-0001-01-01",
        "-1",
        "99999999999999999999",
        "294277-01-01T00:00:00Z",  # past what timestamptz holds
        "0002-01-01T00:00:00+23:59",  # year 1 in UTC, where a year of arithmetic overflows
        "9998-12-31T23:00:00-05:00",  # year 9999 in UTC
    ],
)
async def test_a_made_up_cursor_is_a_422_naming_the_cursor(api, created):
    await api.post("/memories", json={"content": "The user likes green tea"})
    refused = await api.get("/memories", params={"cursor": made_up_cursor(created)})
    assert error_of(refused, 422)["field"] == "cursor"


@pytest.fixture
async def tenant_key(service, engram):
    ctx, key = await engram.tenants.create(unique_tenant("cursor"))
    return f"{service.url}/t/{ctx.name}/v1", key


_B64 = st.binary(max_size=60).map(lambda raw: base64.urlsafe_b64encode(raw).decode())
_ENDS = st.datetimes(max_value=datetime(1, 1, 3), timezones=st.timezones()) | st.datetimes(
    min_value=datetime(9999, 12, 30), timezones=st.timezones()
)  # where an offset overflows
_DATES = (st.datetimes(timezones=st.timezones()) | _ENDS).map(datetime.isoformat) | st.text(max_size=30)
_CURSORS = st.text(max_size=60) | _B64 | _DATES.map(made_up_cursor)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cursor=_CURSORS)
def test_no_cursor_is_a_500(tenant_key, cursor):
    """Whatever a client sends as the cursor: a page, or a 422 naming the cursor."""
    base, key = tenant_key
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        response = client.get("/memories", params={"cursor": cursor})
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert response.json()["error"]["field"] == "cursor"


@pytest.mark.parametrize("edge", ["0002-01-01T00:00:00+23:59", "9998-12-31T23:00:00-05:00"])
async def test_an_instant_outside_the_years_in_utc_is_refused_with_its_field(api, edge):
    """Inside the years on its own clock, outside them in UTC: a day or a year of arithmetic, or
    the database driver's conversion, would overflow."""
    for params in ({"created_after": edge}, {"occurred_before": edge}):
        assert error_of(await api.get("/memories", params=params), 422)["field"] == next(iter(params))
    for body in ({"occurred_at": edge}, {"now": edge}):
        created = await api.post("/memories", json={"content": "The user drank tea", **body})
        assert error_of(created, 422)["field"] == next(iter(body))
    searched = await api.post("/search", json={"query": "tea", "now": edge})
    assert error_of(searched, 422)["field"] == "now"


async def test_last_year_asked_in_year_two_east_of_greenwich_is_answered(api):
    """A window starting in year 1 at +14:00 is year 0 in UTC: no time, rather than a 500."""
    await api.post("/memories", json={"content": "The user drank tea"})
    for query in ("what did I do last year", "去年我做了什么", "tea last month"):
        searched = await api.post("/search", json={"query": query, "now": "0002-06-01T00:00:00+14:00"})
        assert searched.status_code == 200, (query, searched.text)


@pytest.mark.parametrize(
    "content", ["My flight is on December 31, 9999", "I was born on July 4, 0001", "我9999年12月31日飞东京"]
)
async def test_a_day_named_outside_the_years_is_kept_in_words_only(api, content):
    """The day a text names becomes its occurred_at only inside the years any date holds: a
    memory "on December 31, 9999" was stored with it, and broke the timeline."""
    created = await api.post("/memories", json={"content": content})
    assert created.status_code == 201, created.text
    assert created.json()["memory"]["occurred_at"] is None
    for bucket in ("auto", "day", "week", "month", "year"):
        timeline = await api.get("/memories/timeline", params={"bucket": bucket})
        assert timeline.status_code == 200, (bucket, timeline.text)


async def test_an_import_with_a_date_outside_the_years_is_a_422_naming_its_line(api):
    await api.post("/memories", json={"content": "The user likes green tea"})
    header, line, end = (await api.get("/export")).text.splitlines()
    exported = json.loads(line)
    for field in ("created_at", "updated_at", "last_accessed_at", "reinforced_at", "forgotten_at"):
        for date in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-06-01T00:00:00Z"):
            memory = {**exported["memory"], "id": str(uuid.uuid4()), "content": f"a {field} fact", field: date}
            body = "\n".join([header, json.dumps({**exported, "memory": memory}), end])
            error = error_of(await api.post("/import", content=body.encode()), 422)
            assert error["field"] == "line 2" and f"memory.{field}" in error["message"], error
    event = {**exported["history"][0], "at": "0001-01-01T00:00:00+05:00"}
    body = "\n".join([header, json.dumps({**exported, "history": [event]}), end])
    error = error_of(await api.post("/import", content=body.encode()), 422)
    assert error["field"] == "line 2" and "history: Value error, entry 0's at" in error["message"], error
    assert [m["content"] for m in (await api.get("/memories")).json()["items"]] == ["The user likes green tea"]
