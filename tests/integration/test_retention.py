"""A tenant's retention: how long memories of each layer and type live, and how long forgotten
ones wait before the purge. The schedule applies it; without one, today's defaults hold."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import tenant_api, unique_tenant
from tests.integration.test_cli import cli_env  # noqa: F401 - the CLI fixture
from tests.integration.test_cli import engram as run_cli

pytestmark = pytest.mark.usefixtures("service")
DEFAULTS = {"layers": {}, "types": {}, "purge_after_days": None}


async def _write(client, **body) -> str:
    written = await client.post("/memories", json=body)
    assert written.status_code == 201, written.text
    return written.json()["memory"]["id"]


@pytest.fixture
async def shop(service, engram):
    name = unique_tenant("keep")
    ctx, key = await engram.tenants.create(name)
    async with tenant_api(service, name, key) as client:
        yield client, ctx


async def test_without_a_retention_the_defaults_hold(shop, engram):
    client, ctx = shop
    assert (await client.get("/retention")).json() == DEFAULTS
    session = await _write(client, content="The user is comparing two laptops today", layer="session", session_id="s1")
    event = await _write(client, content="The user flew to Oslo on 3 March", type="event")
    report = await engram.forgetting.run(ctx, dry_run=True, now=datetime.now(UTC) + timedelta(hours=25))
    assert [str(i) for i in report.expired] == [session]  # a session memory lives a day
    assert event not in {str(i) for i in report.expired}


async def test_lifetimes_per_layer_and_type_are_applied_by_the_schedule(shop, engram):
    client, ctx = shop
    wanted = {"layers": {"session": 7}, "types": {"event": 365}, "purge_after_days": 2}
    stored = await client.put("/retention", json=wanted)
    assert stored.status_code == 200 and stored.json() == wanted, stored.text
    assert (await client.get("/retention")).json() == wanted
    session = await _write(client, content="The user is comparing two laptops today", layer="session", session_id="s1")
    event = await _write(client, content="The user flew to Oslo on 3 March", type="event")
    fact = await _write(client, content="The user is allergic to penicillin", pinned=True)
    now = datetime.now(UTC)

    day_later = await engram.forgetting.run(ctx, dry_run=True, now=now + timedelta(hours=25))
    assert day_later.expired == []  # the session layer lives a week here
    note = await _write(client, content="The user's spare key is under the mat")
    assert (await client.post(f"/memories/{note}/forget")).is_success
    three_days = await engram.forgetting.run(ctx, dry_run=True, now=now + timedelta(days=3))
    assert [str(i) for i in three_days.purged] == [note]  # the tenant's 2 days, not the default 30
    week_later = await engram.forgetting.run(ctx, now=now + timedelta(days=8))
    assert [str(i) for i in week_later.expired] == [session]
    history = (await client.get(f"/memories/{session}/history")).json()
    assert history[-1]["event"] == "forgotten"
    assert history[-1]["details"]["reason"] == "retention: session memories live 7 days"

    year_later = await engram.forgetting.run(ctx, now=now + timedelta(days=366))
    assert [str(i) for i in year_later.expired] == [event]
    assert (await client.get(f"/memories/{event}/history")).json()[-1]["details"]["reason"] == (
        "retention: event memories live 365 days"
    )
    assert (await client.get(f"/memories/{fact}")).json()["status"] == "active"  # no lifetime for facts
    assert str(session) in {str(i) for i in year_later.purged}  # forgotten past the tenant's 2 days


async def test_the_shorter_lifetime_wins_and_a_user_run_follows_the_tenants(shop, engram):
    client, ctx = shop
    await client.put("/retention", json={"layers": {"long_term": 30}, "types": {"preference": 10}})
    pref = await _write(client, content="The user prefers window seats", type="preference", user_id="ana")
    fact = await _write(client, content="The user lives in Lyon", user_id="ana", pinned=True)
    other = await _write(client, content="The user prefers aisle seats", type="preference", user_id="ben")
    now = datetime.now(UTC)
    report = await engram.forgetting.run(ctx.pinned_to("ana"), now=now + timedelta(days=11))
    assert [str(i) for i in report.expired] == [pref]  # ana's alone, at the type's 10 days
    assert (await client.get(f"/memories/{other}")).json()["status"] == "active"
    reason = (await client.get(f"/memories/{pref}/history")).json()[-1]["details"]["reason"]
    assert reason == "retention: preference memories live 10 days"
    pinned_too = await engram.forgetting.run(ctx, dry_run=True, now=now + timedelta(days=31))
    assert {fact, other} <= {str(i) for i in pinned_too.expired}  # a retention binds pinned memories too


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"layers": {"session": 0}}, "layers.session"),
        ({"layers": {"weekly": 3}}, "layers.weekly.[key]"),
        ({"types": {"event": 40_000}}, "types.event"),
        ({"types": {"event": "a year"}}, "types.event"),
        ({"purge_after_days": -1}, "purge_after_days"),
        ({"keep": 3}, "keep"),
    ],
)
async def test_a_bad_retention_is_refused_naming_the_field(shop, body, field):
    client, _ = shop
    await client.put("/retention", json={"types": {"event": 365}})
    refused = await client.put("/retention", json=body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["field"] == field
    assert (await client.get("/retention")).json()["types"] == {"event": 365}  # unchanged


async def test_a_users_key_reads_the_retention_but_cannot_change_it(service, shop, engram):
    client, ctx = shop
    user_key = (await client.post("/users/ana/keys")).json()["api_key"]
    async with tenant_api(service, ctx.name, user_key) as ana:
        assert (await ana.get("/retention")).json() == DEFAULTS
        refused = await ana.put("/retention", json={"layers": {"session": 1}})
        assert refused.status_code == 403
    assert (await client.get("/retention")).json() == DEFAULTS
    assert (await client.put("/retention", json={})).json() == DEFAULTS


def test_the_cli_shows_and_changes_the_retention(cli_env):  # noqa: F811
    name = unique_tenant("keep")
    assert run_cli(cli_env, "tenant", "create", name).returncode == 0
    shown = run_cli(cli_env, "retention", "-t", name)
    assert shown.returncode == 0 and json.loads(shown.stdout) == DEFAULTS
    changed = run_cli(cli_env, "retention", "-t", name, "--layer", "session=7", "--type", "event=365")
    expected = {"layers": {"session": 7.0}, "types": {"event": 365.0}, "purge_after_days": None}
    assert json.loads(changed.stdout) == expected, changed.stderr
    more = run_cli(cli_env, "retention", "-t", name, "--type", "event=30", "--purge-after-days", "3")
    assert json.loads(more.stdout) == {"layers": {"session": 7.0}, "types": {"event": 30.0}, "purge_after_days": 3.0}
    for bad in (["--layer", "session"], ["--layer", "weekly=3"], ["--type", "event=0"]):
        refused = run_cli(cli_env, "retention", "-t", name, *bad)
        assert refused.returncode == 2, (bad, refused.stderr)
    reset = run_cli(cli_env, "retention", "-t", name, "--reset")
    assert json.loads(reset.stdout) == DEFAULTS
