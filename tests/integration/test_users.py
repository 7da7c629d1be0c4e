"""End users inside one tenant, through REST, MCP and the CLI: a user's memories are theirs alone,
the tenant's own are shared, and a key or URL pinned to a user reaches nothing else."""

import json
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import unique_tenant
from tests.integration.test_cli import cli_env  # noqa: F401 - the CLI fixture
from tests.integration.test_cli import engram as run_cli

pytestmark = pytest.mark.usefixtures("service")


@pytest.fixture
async def shop(service, engram):
    """A tenant serving two customers (alice, bob) and holding one shared memory."""
    name = unique_tenant("users")
    _, key = await engram.tenants.create(name)
    async with httpx.AsyncClient(base_url=f"{service.url}/t/{name}/v1", headers=_bearer(key)) as client:
        ids = {}
        for user, content in [
            ("alice", "The user complained that the delivery of order 5512 was slow"),
            ("bob", "The user's order 7734 arrived damaged"),
            (None, "The shop ships every weekday from the Lyon warehouse"),
        ]:
            body = {"content": content, **({"user_id": user} if user else {})}
            written = await client.post("/memories", json=body)
            assert written.status_code == 201, written.text
            ids[user] = written.json()["memory"]["id"]
        yield client, name, key, ids


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _found(client: httpx.AsyncClient, query: str, **filter_) -> list[str]:
    response = await client.post("/search", json={"query": query, "top_k": 10, "filter": filter_})
    assert response.status_code == 200, response.text
    return [h["memory"]["id"] for h in response.json()["hits"]]


async def test_a_users_search_holds_their_memories_and_the_shared_ones_only(shop):
    client, _, _, ids = shop
    for query in ("delivery was slow", "order arrived damaged", "where does the shop ship from", "order"):
        alice = await _found(client, query, user_id="alice")
        assert ids["bob"] not in alice
        assert set(alice) <= {ids["alice"], ids[None]}
        bob = await _found(client, query, user_id="bob")
        assert ids["alice"] not in bob
    assert await _found(client, "delivery was slow", user_id="alice", own_only=True) == [ids["alice"]]
    assert ids[None] in await _found(client, "where does the shop ship from", user_id="alice")
    assert ids[None] not in await _found(client, "where does the shop ship from", user_id="alice", own_only=True)
    # the tenant's own view, acting for no user, sees every memory
    assert {ids["alice"], ids["bob"]} <= set(await _found(client, "order"))
    assert await _found(client, "order 5512", user_id="carol", own_only=True) == []


async def test_listing_counts_and_users_appear_on_first_use(shop):
    client, _, _, ids = shop
    listed = (await client.get("/memories", params={"user_id": "bob"})).json()["items"]
    assert {m["id"] for m in listed} == {ids["bob"], ids[None]}
    assert {m["user_id"] for m in listed} == {"bob", None}
    own = (await client.get("/memories", params={"user_id": "bob", "own_only": "true"})).json()["items"]
    assert [m["id"] for m in own] == [ids["bob"]]
    users = (await client.get("/users")).json()
    assert [(u["user_id"], u["active"]) for u in users["users"]] == [("alice", 1), ("bob", 1)]
    await client.post("/memories", json={"content": "The user prefers email to phone calls", "user_id": "carol"})
    page = (await client.get("/users", params={"limit": 2})).json()
    assert [u["user_id"] for u in page["users"]] == ["alice", "bob"] and page["next_cursor"] == "bob"
    rest = (await client.get("/users", params={"after": page["next_cursor"]})).json()
    assert [u["user_id"] for u in rest["users"]] == ["carol"] and rest["next_cursor"] is None
    assert [u["user_id"] for u in (await client.get("/users", params={"prefix": "ca"})).json()["users"]] == ["carol"]
    stats = (await client.get("/stats", params={"user_id": "alice"})).json()
    assert stats["by_status"]["active"] == 2  # alice's and the shared one


async def test_by_id_another_users_memory_is_not_found_and_the_shared_one_is_read_only(shop):
    client, _, _, ids = shop
    bob, shared = ids["bob"], ids[None]
    as_alice = {"user_id": "alice"}
    for method, path, body in [
        ("GET", f"/memories/{bob}", None),
        ("GET", f"/memories/{bob}/history", None),
        ("GET", f"/memories/{bob}/versions", None),
        ("PATCH", f"/memories/{bob}", {"importance": 0.9}),
        ("POST", f"/memories/{bob}/forget", {}),
        ("POST", f"/memories/{bob}/restore", None),
        ("DELETE", f"/memories/{bob}", None),
    ]:
        response = await client.request(method, path, params=as_alice, json=body)
        assert response.status_code == 404, (method, path, response.text)
        made_up = str(uuid.uuid4())  # indistinguishable from a memory that does not exist
        missing = await client.request(method, path.replace(bob, made_up), params=as_alice, json=body)
        assert response.text.replace(bob, made_up) == missing.text
    assert (await client.get(f"/memories/{shared}", params=as_alice)).status_code == 200
    refused = await client.post(f"/memories/{shared}/forget", params=as_alice, json={})
    assert refused.status_code == 403 and refused.json()["error"]["field"] == "user_id"
    assert (await client.get(f"/memories/{bob}")).json()["status"] == "active"  # nothing changed
    # alice's own: she changes it
    assert (
        await client.patch(f"/memories/{ids['alice']}", params=as_alice, json={"importance": 0.9})
    ).status_code == 200


async def test_writes_never_cross_users(shop):
    client, _, _, _ = shop
    same = "The user lives in Paris"
    a = (await client.post("/memories", json={"content": same, "user_id": "alice"})).json()
    b = await client.post("/memories", json={"content": same, "user_id": "bob"})
    assert b.status_code == 201 and b.json()["outcome"] == "created"  # not a duplicate of alice's
    assert a["memory"]["id"] != b.json()["memory"]["id"]
    moved = (await client.post("/memories", json={"content": "The user moved to London", "user_id": "bob"})).json()
    assert a["memory"]["id"] not in {m["id"] for m in moved["superseded"]}
    assert a["memory"]["id"] not in {c["id"] for c in moved["candidates"]}
    assert (await client.get(f"/memories/{a['memory']['id']}")).json()["status"] == "active"
    # replaces may only name the writer's own memories
    crossed = await client.post(
        "/memories", json={"content": "The user moved to Rome", "user_id": "bob", "replaces": [a["memory"]["id"]]}
    )
    assert crossed.status_code == 404 and crossed.json()["error"]["field"] == "replaces[0]"
    # the same text in other words, for another user, is not touched either
    touched = await client.post("/memories", json={"content": "The user resides in Paris", "user_id": "carol"})
    assert touched.json()["outcome"] == "created"


async def test_remember_keeps_each_turn_with_its_user(shop):
    client, _, _, _ = shop
    said = {"user": "I'm allergic to peanuts", "user_id": "alice"}
    remembered = (await client.post("/remember", json=said)).json()
    assert [r["memory"]["user_id"] for r in remembered["results"]] == ["alice"]
    again = (await client.post("/remember", json={**said, "user_id": "bob"})).json()
    assert [r["outcome"] for r in again["results"]] == ["created"]


async def test_consolidation_and_forgetting_stay_inside_one_user(shop, engram):
    client, name, _, _ = shop
    for user in ("alice", "bob"):
        for content in ("The user drinks black coffee", "The user drinks coffee, black"):
            await client.post("/memories", json={"content": content, "user_id": user})
    ctx = await engram.tenants.resolve(name)
    report = await engram.consolidation.run(ctx)
    owners = {}
    for memory in (await engram.memories.list(ctx, filter_all(), limit=500)).items:
        owners[memory.id] = memory.user_id
    for pair in report.merged:
        assert owners[pair.kept] == owners[pair.superseded]
    as_bob = (await client.post("/forgetting/run", params={"user_id": "bob", "dry_run": "true"})).json()
    bobs = {str(i) for i, owner in owners.items() if owner == "bob"}
    assert {c["memory"]["id"] for c in as_bob["candidates"]} <= bobs
    assert {k["memory_id"] for k in as_bob["kept"]} <= bobs


def filter_all():
    from engram.domain.models import MemoryFilter, Status

    return MemoryFilter(statuses=list(Status))


async def test_a_key_bound_to_a_user_reaches_that_user_only(shop, service):
    client, name, _, ids = shop
    issued = await client.post("/users/alice/keys")
    assert issued.status_code == 201
    key = issued.json()["api_key"]
    async with httpx.AsyncClient(base_url=f"{service.url}/t/{name}/v1", headers=_bearer(key)) as alice:
        written = (await alice.post("/memories", json={"content": "The user wants a refund"})).json()
        assert written["memory"]["user_id"] == "alice"  # no user_id needed: the key names her
        refused = await alice.post("/memories", json={"content": "The user wants a refund", "user_id": "bob"})
        assert refused.status_code == 403 and refused.json()["error"]["field"] == "user_id"
        assert (await alice.post("/search", json={"query": "x", "filter": {"user_id": "bob"}})).status_code == 403
        assert (await alice.get("/memories", params={"user_id": "bob"})).status_code == 403
        assert ids["bob"] not in await _found(alice, "order arrived damaged")
        assert (await alice.get(f"/memories/{ids['bob']}")).status_code == 404
        assert (await alice.post(f"/memories/{ids[None]}/forget", json={})).status_code == 403
        listed = {
            m["id"] for m in (await alice.get("/memories", params={"status": ["active", "forgotten"]})).json()["items"]
        }
        assert ids["bob"] not in listed and ids["alice"] in listed
        assert [u["user_id"] for u in (await alice.get("/users")).json()["users"]] == ["alice"]
        assert (await alice.post("/users/alice/keys")).status_code == 403  # only the tenant issues keys
        exported = (await alice.get("/export")).text
        assert ids["alice"] in exported and ids["bob"] not in exported and ids[None] not in exported
        jobs = (await alice.post("/forgetting/run", params={"dry_run": "true"})).json()
        assert ids["bob"] not in json.dumps(jobs)


async def test_a_user_key_survives_the_tenant_key_rotation(shop, service, engram):
    client, name, _, ids = shop
    key = (await client.post("/users/bob/keys")).json()["api_key"]
    await engram.tenants.rotate_key(name)
    async with httpx.AsyncClient(base_url=f"{service.url}/t/{name}/v1", headers=_bearer(key)) as bob:
        assert (await bob.get(f"/memories/{ids['bob']}")).status_code == 200
    assert (await client.delete("/users/bob/keys")).json() == {"revoked": 1}
    async with httpx.AsyncClient(base_url=f"{service.url}/t/{name}/v1", headers=_bearer(key)) as bob:
        assert (await bob.get(f"/memories/{ids['bob']}")).status_code == 401


@pytest.mark.parametrize("user", ["", "a/b", "x" * 129, "名字", "a b"])
async def test_an_invalid_user_id_is_a_422_naming_the_field(shop, user):
    client, _, _, _ = shop
    written = await client.post("/memories", json={"content": "The user likes tea", "user_id": user})
    assert written.status_code == 422 and written.json()["error"]["field"] == "user_id"
    if user and "/" not in user:
        listed = await client.get("/memories", params={"user_id": user})
        assert listed.status_code == 422 and listed.json()["error"]["field"] == "user_id"


def _mcp(url: str, key: str):
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=_bearer(key)))


async def test_the_seeds_story_one_connection_many_customers(service, engram):
    """Customer A complains through one agent session; a week later another session of the same
    agent, serving A, finds it first; customer B, on the same connection, never sees it."""
    name = unique_tenant("story")
    _, key = await engram.tenants.create(name)
    week_ago = datetime.now(UTC) - timedelta(days=7)
    async with Client(_mcp(f"{service.url}/t/{name}/mcp", key)) as agent:
        said = await agent.call_tool(
            "remember",
            {
                "user": "My package still hasn't arrived, delivery is really slow this time",
                "assistant": "Sorry about that, I've escalated it.",
                "session_id": "support-1",
                "now": week_ago.isoformat(),
                "user_id": "customer-a",
            },
        )
        assert not said.is_error and said.structured_content["results"], said.content
        await agent.call_tool(
            "remember", {"user": "I'd like to change my delivery address to 5 Rue Victor Hugo", "user_id": "customer-b"}
        )
    async with Client(_mcp(f"{service.url}/t/{name}/mcp", key)) as later:
        for query in ("what did this customer complain about", "delivery problems"):
            found = await later.call_tool("search_memory", {"query": query, "user_id": "customer-a"})
            hits = found.structured_content["hits"]
            assert hits and "slow" in hits[0]["content"].lower(), hits
            other = await later.call_tool("search_memory", {"query": query, "user_id": "customer-b"})
            assert all("slow" not in h["content"].lower() for h in other.structured_content["hits"])


async def test_mcp_per_user_url_and_user_key(shop, service):
    _, name, key, ids = shop
    async with Client(_mcp(f"{service.url}/t/{name}/u/alice/mcp", key)) as alice:
        found = await alice.call_tool("search_memory", {"query": "order delivery damaged slow", "detail": "full"})
        assert {h["memory"]["id"] for h in found.structured_content["hits"]} <= {ids["alice"], ids[None]}
        crossed = await alice.call_tool("search_memory", {"query": "order", "user_id": "bob"})
        assert crossed.is_error and "user_id" in crossed.content[0].text
        missing = await alice.call_tool("get_memory", {"memory_id": ids["bob"]})
        assert missing.is_error and "not_found" in missing.content[0].text
        written = await alice.call_tool(
            "write_memory", {"content": "The user prefers evening deliveries", "detail": "full"}
        )
        assert written.structured_content["memory"]["memory"]["user_id"] == "alice"
    user_key = (
        await httpx.AsyncClient().post(f"{service.url}/t/{name}/v1/users/bob/keys", headers=_bearer(key))
    ).json()["api_key"]
    async with Client(_mcp(f"{service.url}/t/{name}/mcp", user_key)) as bob:
        listed = await bob.call_tool("list_memories", {"detail": "full"})
        assert {m.get("user_id") for m in listed.structured_content["items"]} <= {"bob", None}
        assert (await bob.call_tool("forget_memory", {"memory_id": ids["alice"]})).is_error
    async with httpx.AsyncClient() as raw:  # a user's key on another user's URL
        refused = await raw.post(f"{service.url}/t/{name}/u/alice/mcp", headers=_bearer(user_key), json={})
        assert refused.status_code == 403
        bad = await raw.post(f"{service.url}/t/{name}/u/a%20b/mcp", headers=_bearer(key), json={})
        assert bad.status_code == 422


def test_cli_acts_for_a_user(cli_env):  # noqa: F811
    name = unique_tenant("cliusers")
    assert run_cli(cli_env, "tenant", "create", name).returncode == 0
    for user, content in (("alice", "The user's parcel 5512 was late"), ("bob", "The user's parcel 7734 was lost")):
        written = run_cli(cli_env, "write", content, "-t", name, "--user-id", user, "--json")
        assert written.returncode == 0, written.stderr
    found = json.loads(run_cli(cli_env, "search", "parcel", "-t", name, "--user-id", "alice", "--json").stdout)
    assert [h["memory"]["user_id"] for h in found["hits"]] == ["alice"]
    listed = run_cli(cli_env, "users", "list", "-t", name)
    assert "alice" in listed.stdout and "bob" in listed.stdout
    key = run_cli(cli_env, "users", "key", "alice", "-t", name)
    assert key.returncode == 0 and key.stdout.startswith(f"ek.{name}.")
    bad = run_cli(cli_env, "list", "-t", name, "--user-id", "a/b")
    assert bad.returncode == 2 and "user" in bad.stderr
    erased = run_cli(cli_env, "users", "erase", "alice", "-t", name, "--yes")
    assert erased.returncode == 0, erased.stderr
    receipt = json.loads(erased.stdout)
    assert receipt["complete"] and receipt["removed"]["memories"] == 1
    assert "alice" not in run_cli(cli_env, "users", "list", "-t", name).stdout


# -- a fuzz of ids across users ------------------------------------------------------------------

OPERATIONS = [
    ("GET", "/memories/{id}", None),
    ("GET", "/memories/{id}/history", None),
    ("GET", "/memories/{id}/versions", None),
    ("PATCH", "/memories/{id}", {"importance": 0.7}),
    ("PATCH", "/memories/{id}", {"content": "The user changed it"}),
    ("POST", "/memories/{id}/forget", {}),
    ("POST", "/memories/{id}/restore", None),
    ("DELETE", "/memories/{id}", None),
]


@pytest.fixture
async def crowd(service, engram):
    """Three users with two memories each, one shared memory, and a key for each user."""
    name = unique_tenant("crowd")
    _, key = await engram.tenants.create(name)
    owners: dict[str, str | None] = {}
    keys = {}
    async with httpx.AsyncClient(base_url=f"{service.url}/t/{name}/v1", headers=_bearer(key)) as client:
        for user in ("u1", "u2", "u3"):
            keys[user] = (await client.post(f"/users/{user}/keys")).json()["api_key"]
            for n in range(2):
                body = {"content": f"The user's note {n} about {user}", "user_id": user}
                owners[(await client.post("/memories", json=body)).json()["memory"]["id"]] = user
        owners[(await client.post("/memories", json={"content": "The shop opens at 9"})).json()["memory"]["id"]] = None
    return name, key, keys, owners


async def test_fuzz_no_user_reaches_another_users_memory(crowd, service):
    name, tenant_key, keys, owners = crowd
    ids = sorted(owners)
    changed = set()  # memories a change by their own user reached

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        user=st.sampled_from(sorted(keys)),
        target=st.sampled_from([*ids, str(uuid.uuid4())]),
        operation=st.sampled_from(OPERATIONS),
        via_param=st.booleans(),
    )
    def check(user, target, operation, via_param):
        method, path, body = operation
        # the user's own key, or the tenant's key acting for the user
        headers = _bearer(keys[user])
        with httpx.Client(base_url=f"{service.url}/t/{name}/v1", headers=headers) as client:
            response = client.request(
                method, path.format(id=target), json=body, params={"user_id": user} if via_param else None
            )
        owner = owners.get(target, "missing")
        if owner == user and method != "GET":
            changed.add(target)
        if owner not in (user, None):
            assert response.status_code == 404, (user, target, owner, method, path, response.text)
        elif owner is None and method != "GET":
            assert response.status_code == 403, response.text
        else:
            assert response.status_code < 500, response.text

    check()
    # what no change of its own user reached is as it was written: nobody else changed it
    with httpx.Client(base_url=f"{service.url}/t/{name}/v1", headers=_bearer(tenant_key)) as client:
        for memory_id in set(owners) - changed:
            events = [e["event"] for e in client.get(f"/memories/{memory_id}/history").json()]
            assert events == ["written"], (memory_id, owners[memory_id], events)


# -- erasure -----------------------------------------------------------------------------------


async def test_erasing_a_user_leaves_nothing_of_theirs_and_stays_erased(shop, engram):
    client, name, _, ids = shop
    said = ["The user complained that the courier left the parcel in the rain", "The user lives in Grenoble"]
    for content in said:
        await client.post("/memories", json={"content": content, "user_id": "alice"})
    moved = await client.post("/memories", json={"content": "The user moved to Annecy", "user_id": "alice"})
    forgotten = moved.json()["memory"]["id"]
    await client.post(f"/memories/{forgotten}/forget", params={"user_id": "alice"}, json={"reason": "Annecy typo"})
    await _found(client, "courier parcel rain", user_id="alice")  # a cached query vector of hers
    alice_key = (await client.post("/users/alice/keys")).json()["api_key"]
    before = (await client.get("/export", params={"user_id": "alice"})).content
    bob_before = (await client.get(f"/memories/{ids['bob']}")).json()

    receipt = (await client.delete("/users/alice")).json()
    assert receipt["complete"] is True and not any(receipt["remaining"].values()), receipt
    assert receipt["removed"]["memories"] == 4 and receipt["removed"]["memory_history"] >= 5
    assert receipt["removed"]["api_keys"] == 1 and receipt["removed"]["query_cache"] >= 1
    assert receipt["removed"]["tombstones"] == 4

    ctx = await engram.tenants.resolve(name)
    async with engram.pool.acquire() as conn:
        await conn.execute("CHECKPOINT")
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", ctx.schema.strip('"')
        )
        for table in (r["table_name"] for r in tables):
            left = await conn.fetchval(
                f"SELECT count(*) FROM {ctx.schema}.{table} t WHERE t::text ~* 'courier|grenoble|annecy|complain'"
            )
            assert left == 0, table
    export = (await client.get("/export")).text
    assert "Grenoble" not in export and "5512" not in export and ids["bob"] in export
    assert ids["alice"] not in export
    assert (await client.get(f"/memories/{ids['bob']}")).json() == bob_before  # bob's untouched
    assert (await client.get("/users")).json()["users"][0]["user_id"] == "bob"
    async with httpx.AsyncClient(base_url=str(client.base_url), headers=_bearer(alice_key)) as alice:
        assert (await alice.get("/memories")).status_code == 401

    again = (await client.delete("/users/alice")).json()  # idempotent
    assert again["complete"] is True and again["removed"]["memories"] == 0
    imported = (await client.post("/import", content=before, headers={"content-type": "application/x-ndjson"})).json()
    assert (imported["imported"], imported["erased"]) == (0, 4)  # an erased memory stays erased
    assert "Grenoble" not in (await client.get("/export")).text


async def test_an_erasure_cut_short_leaves_everything_and_a_rerun_completes_it(shop, engram):
    _, name, _, ids = shop
    ctx = await engram.tenants.resolve(name)
    async with engram.pool.acquire() as conn:  # the process dies at the last delete: a stand-in
        await conn.execute(
            f"""CREATE FUNCTION {ctx.schema}.crash() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'crash'; END $$;
                CREATE TRIGGER crash BEFORE DELETE ON {ctx.schema}.memories
                FOR EACH STATEMENT EXECUTE FUNCTION {ctx.schema}.crash()"""
        )
    with pytest.raises(Exception, match="crash"):
        await engram.erasure.user(ctx, "alice")
    async with engram.pool.acquire() as conn:
        assert await conn.fetchval(
            f"SELECT count(*) FROM {ctx.schema}.memory_history WHERE memory_id = $1", uuid.UUID(ids["alice"])
        )
        assert not await conn.fetchval(f"SELECT count(*) FROM {ctx.schema}.erased")
        await conn.execute(f"DROP TRIGGER crash ON {ctx.schema}.memories")
    receipt = await engram.erasure.user(ctx, "alice")
    assert receipt.complete and receipt.removed["memories"] == 1
