"""Erasing the memories a filter or a query selects, for good and at once, with a receipt: what a
dry run says is what goes, nothing outside the selection changes, a user's key reaches only
that user's own, and what was derived from an erased memory goes with it."""

import json
import uuid

import httpx
import pytest

from engram.domain.models import NewMemory
from tests.conftest import tenant_api, unique_tenant
from tests.integration.test_cli import cli_env  # noqa: F401 - the CLI fixture
from tests.integration.test_cli import engram as run_cli

pytestmark = pytest.mark.usefixtures("service")
EVERY_STATUS = {"status": ["active", "forgotten", "superseded"]}


@pytest.fixture
async def case(service, engram):
    """A tenant holding a support case's memories (tagged case-77, one forgotten) and others."""
    name = unique_tenant("erase")
    _, key = await engram.tenants.create(name)
    async with tenant_api(service, name, key) as client:
        ids: dict[str, str] = {}
        for label, body in {
            "refund": {"content": "The user asked for a refund of order 9931", "tags": ["case-77"]},
            "address": {"content": "The user's parcel goes to 14 rue Mercière", "tags": ["case-77"]},
            "phone": {"content": "The user can be called on 06 12 34 56 78", "tags": ["case-77"]},
            "tea": {"content": "The user drinks green tea every morning"},
            "other": {"content": "The user asked for a refund of order 1208", "tags": ["case-80"]},
        }.items():
            written = await client.post("/memories", json=body)
            assert written.status_code == 201, written.text
            ids[label] = written.json()["memory"]["id"]
        assert (await client.post(f"/memories/{ids['phone']}/forget", json={"reason": "06 12 34 56 78"})).is_success
        yield client, name, key, ids


async def _all(client: httpx.AsyncClient, **params) -> set[str]:
    page = (await client.get("/memories", params={**EVERY_STATUS, **params, "limit": 500})).json()
    return {m["id"] for m in page["items"]}


async def test_a_dry_run_says_what_goes_and_the_erasure_takes_exactly_that(case):
    client, _, _, ids = case
    before = await _all(client)
    dry = (await client.post("/erase", json={"filter": {"tags": ["case-77"]}, "dry_run": True})).json()
    assert dry["dry_run"] is True and dry["complete"] is False
    assert set(dry["memory_ids"]) == {ids["refund"], ids["address"], ids["phone"]}  # the forgotten one too
    assert await _all(client) == before  # nothing went

    receipt = (await client.post("/erase", json={"filter": {"tags": ["case-77"]}})).json()
    assert receipt["complete"] is True and not any(receipt["remaining"].values()), receipt
    assert set(receipt["memory_ids"]) == set(dry["memory_ids"])
    assert receipt["removed"]["memories"] == 3 and receipt["removed"]["tombstones"] == 3
    assert receipt["selection"] == {"filter": {"tags": ["case-77"]}}
    assert await _all(client) == before - set(dry["memory_ids"])
    for memory_id in dry["memory_ids"]:
        assert (await client.get(f"/memories/{memory_id}/history")).status_code == 404
    export = (await client.get("/export")).text
    assert "Mercière" not in export and "9931" not in export and "06 12 34" not in export and "1208" in export
    again = (await client.post("/erase", json={"filter": {"tags": ["case-77"]}})).json()
    assert again["complete"] and again["removed"]["memories"] == 0


async def test_a_querys_hits_are_erased_within_the_filter(case):
    client, _, _, ids = case
    receipt = (await client.post("/erase", json={"query": "refund order 9931", "top_k": 1})).json()
    assert receipt["memory_ids"] == [ids["refund"]] and receipt["complete"], receipt
    assert ids["other"] in await _all(client)
    narrowed = {"query": "refund", "filter": {"tags": ["case-80"]}}
    assert (await client.post("/erase", json=narrowed)).json()["memory_ids"] == [ids["other"]]
    assert await _all(client) == {ids["address"], ids["phone"], ids["tea"]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "filter"),
        ({"top_k": 3, "filter": {"tags": ["x"]}}, "top_k"),
        ({"filter": {"tags": ["x"]}, "dryrun": True}, "dryrun"),
        ({"query": ""}, "query"),
        ({"filter": {"statuses": ["gone"]}}, "filter.statuses[0]"),
    ],
)
async def test_a_vague_or_bad_selection_is_refused_naming_the_field(case, body, field):
    client, _, _, _ = case
    before = await _all(client)
    refused = await client.post("/erase", json=body)
    assert refused.status_code == 422 and refused.json()["error"]["field"] == field, refused.text
    assert await _all(client) == before


async def test_a_users_key_erases_their_own_only(service, case):
    client, name, _, ids = case
    mine = await client.post("/memories", json={"content": "The user's case is case-77", "user_id": "ana"})
    theirs = await client.post("/memories", json={"content": "The user filed case-77 too", "user_id": "ben"})
    shared = await client.post("/memories", json={"content": "Case 77 concerns the Lyon depot", "tags": ["c77"]})
    for written in (mine, theirs, shared):
        assert written.status_code == 201
    ana_key = (await client.post("/users/ana/keys")).json()["api_key"]
    async with tenant_api(service, name, ana_key) as ana:
        erased = (await ana.post("/erase", json={"query": "case-77 Lyon depot", "top_k": 10})).json()
        assert erased["memory_ids"] == [mine.json()["memory"]["id"]], erased
        by_tenant_tag = (await ana.post("/erase", json={"filter": {"tags": ["case-77"]}})).json()
        assert by_tenant_tag["memory_ids"] == []
        refused = await ana.post("/erase", json={"filter": {"user_id": "ben", "tags": ["x"]}})
        assert refused.status_code == 403
    left = await _all(client)
    assert {theirs.json()["memory"]["id"], shared.json()["memory"]["id"], ids["refund"]} <= left
    # the tenant's key naming a user erases that user's own, never the shared ones
    by_user = (await client.post("/erase", json={"filter": {"user_id": "ben"}})).json()
    assert by_user["memory_ids"] == [theirs.json()["memory"]["id"]]
    assert shared.json()["memory"]["id"] in await _all(client)


async def test_what_was_derived_from_an_erased_memory_goes_with_it(case, engram):
    client, name, _, ids = case
    ctx = await engram.tenants.resolve(name)
    derived = await engram.writes.write_batch(
        ctx,
        [NewMemory(content="The user's case 77 is a refund sent to rue Mercière")],
        actor="consolidation",
        derived_from=[uuid.UUID(ids["refund"]), uuid.UUID(ids["tea"])],
    )
    derived_id = str(derived[0].memory.id)
    async with engram.pool.acquire() as conn:  # what a consolidation merge records on the memory kept
        await conn.execute(
            f"""INSERT INTO {ctx.schema}.memory_history (memory_id, event, actor, content, details)
                VALUES ($1, 'merged', 'consolidation', NULL, $2::jsonb)""",
            uuid.UUID(ids["tea"]),
            {"merged_with": ids["address"], "similarity": 0.97, "content": "14 rue Mercière"},
        )
    receipt = (await client.post("/erase", json={"filter": {"tags": ["case-77"]}})).json()
    assert derived_id in receipt["memory_ids"] and receipt["complete"], receipt
    assert receipt["removed"]["history_quoting"] == 1
    assert ids["tea"] in await _all(client)  # its other source stays, to be derived from again
    assert "Mercière" not in (await client.get("/export")).text
    merged = [e for e in (await client.get(f"/memories/{ids['tea']}/history")).json() if e["event"] == "merged"]
    assert merged[0]["details"] == {"merged_with": ids["address"], "similarity": 0.97}


def test_the_cli_erases_a_selection(cli_env, service, engram):  # noqa: F811
    name = unique_tenant("erase")
    created = run_cli(cli_env, "tenant", "create", name)
    assert created.returncode == 0, created.stderr
    for content, tag in (("The user's badge number is 5521", "hr"), ("The user likes jazz", "music")):
        assert run_cli(cli_env, "write", content, "-t", name, "--tag", tag).returncode == 0
    dry = run_cli(cli_env, "erase", "-t", name, "--tag", "hr", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["removed"]["memories"] == 1
    vague = run_cli(cli_env, "erase", "-t", name, "--yes")
    assert vague.returncode == 2 and "filter" in vague.stderr
    done = run_cli(cli_env, "erase", "-t", name, "--tag", "hr", "--yes")
    assert done.returncode == 0 and json.loads(done.stdout)["complete"], done.stdout + done.stderr
    listed = run_cli(cli_env, "list", "-t", name, "--json")
    assert "5521" not in listed.stdout and "jazz" in listed.stdout
