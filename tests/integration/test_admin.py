"""The admin API: tenants created, listed, re-keyed and deleted over REST with the configured admin
key (never a tenant's), the environment guard the operator keeps, and a tenant's erasure with a
receipt; `engram tenant delete` is the same operation."""

import json
import secrets

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from engram.store import control
from tests.conftest import ServerThread, unique_tenant
from tests.integration.test_cli import cli_env  # noqa: F401 - the CLI fixture
from tests.integration.test_cli import engram as run_cli

ADMIN_KEY = secrets.token_urlsafe(32)


@pytest.fixture(scope="module")
def admin_service(settings, bootstrapped):
    with ServerThread(settings.model_copy(update={"admin_key": SecretStr(ADMIN_KEY)}), bootstrapped) as running:
        yield running


@pytest.fixture
async def admin(admin_service):
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=f"{admin_service.url}/admin/v1", headers=headers, timeout=60) as client:
        yield client


def _tenant_client(service, name: str, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"{service.url}/t/{name}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60
    )


async def _create(admin: httpx.AsyncClient, name: str) -> dict:
    created = await admin.post("/tenants", json={"name": name, "environment": "test"})
    assert created.status_code == 201, created.text
    return created.json()


async def test_the_admin_api_is_off_without_an_admin_key(service):
    async with httpx.AsyncClient(base_url=service.url) as client:
        refused = await client.get("/admin/v1/tenants", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert refused.status_code == 403 and "ENGRAM_ADMIN_KEY" in refused.json()["error"]["message"]


async def test_only_the_admin_key_opens_it(admin_service, admin, tenant):
    _, tenant_key = tenant
    async with httpx.AsyncClient(base_url=f"{admin_service.url}/admin/v1") as client:
        assert (await client.get("/tenants")).status_code == 401
        assert (await client.get("/tenants", headers={"Authorization": "Bearer " + "x" * 43})).status_code == 401
        near = ADMIN_KEY[:-1] + ("a" if ADMIN_KEY[-1] != "a" else "b")
        assert (await client.get("/tenants", headers={"Authorization": f"Bearer {near}"})).status_code == 401
        as_tenant = await client.post(
            "/tenants",
            json={"name": unique_tenant("adm"), "environment": "test"},
            headers={"Authorization": f"Bearer {tenant_key}"},
        )
        assert as_tenant.status_code == 403 and "tenant" in as_tenant.json()["error"]["message"]
    assert (await admin.get("/tenants")).status_code == 200


async def test_create_list_and_use_a_tenant(admin_service, admin):
    name = unique_tenant("adm")
    created = await _create(admin, name)
    assert created["tenant"] == name and created["api_key"].startswith(f"ek.{name}.")
    assert created["mcp_url"] == f"{admin_service.url}/t/{name}/mcp"
    assert created["rest_url"] == f"{admin_service.url}/t/{name}/v1"
    async with _tenant_client(admin_service, name, created["api_key"]) as client:
        written = await client.post("/memories", json={"content": "The user's locker code is 4512"})
        assert written.status_code == 201, written.text
    listed = {t["name"]: t for t in (await admin.get("/tenants")).json()["tenants"]}
    assert listed[name]["managed_by"] is None and listed[name]["schema_name"] == created["schema_name"]
    again = await admin.post("/tenants", json={"name": name, "environment": "test"})
    assert again.status_code == 409


@pytest.mark.parametrize("name", ["", "Upper", "under_score", "-lead", "trail-", "a" * 41, "dot.ted", "é"])
async def test_a_bad_name_is_refused_naming_the_field(admin, name):
    refused = await admin.post("/tenants", json={"name": name, "environment": "test"})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "name", refused.text


async def test_a_tenant_of_another_environment_is_refused_and_nothing_is_made(admin):
    name = unique_tenant("adm")
    refused = await admin.post("/tenants", json={"name": name, "environment": "prod"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["field"] == "environment"
    assert name not in {t["name"] for t in (await admin.get("/tenants")).json()["tenants"]}
    unnamed = await admin.post("/tenants", json={"name": name})
    assert unnamed.status_code == 422 and unnamed.json()["error"]["field"] == "environment"


async def test_rotating_keys_with_and_without_overlap(admin_service, admin):
    name = unique_tenant("adm")
    first = (await _create(admin, name))["api_key"]
    overlapping = await admin.post(f"/tenants/{name}/keys", json={"overlap_seconds": 600})
    assert overlapping.status_code == 201, overlapping.text
    second = overlapping.json()["api_key"]
    for key in (first, second):
        async with _tenant_client(admin_service, name, key) as client:
            assert (await client.get("/stats")).status_code == 200
    third = (await admin.post(f"/tenants/{name}/keys")).json()["api_key"]
    for key, expected in ((first, 401), (second, 401), (third, 200)):
        async with _tenant_client(admin_service, name, key) as client:
            assert (await client.get("/stats")).status_code == expected, key
    too_long = await admin.post(f"/tenants/{name}/keys", json={"overlap_seconds": 8 * 24 * 3600})
    assert too_long.status_code == 422 and too_long.json()["error"]["field"] == "overlap_seconds"
    assert (await admin.post(f"/tenants/{unique_tenant('none')}/keys")).status_code == 404


async def test_deleting_a_tenant_erases_it_with_a_receipt(admin_service, admin, pg_dsn):
    name = unique_tenant("adm")
    created = await _create(admin, name)
    async with _tenant_client(admin_service, name, created["api_key"]) as client:
        for content in ("The user's locker code is 4512", "The user is allergic to penicillin"):
            assert (await client.post("/memories", json={"content": content})).status_code == 201
        assert (await client.post("/search", json={"query": "locker code"})).status_code == 200
    receipt = await admin.delete(f"/tenants/{name}")
    assert receipt.status_code == 200, receipt.text
    body = receipt.json()
    assert body["tenant"] == name and body["complete"] is True, body
    assert body["removed"]["memories"] == 2 and body["removed"]["memory_history"] >= 2
    assert body["removed"]["api_keys"] == 1 and body["removed"]["query_cache"] >= 1
    assert not any(body["remaining"].values())
    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute("CHECKPOINT")
        assert await conn.fetchval("SELECT count(*) FROM pg_namespace WHERE nspname = $1", created["schema_name"]) == 0
        assert not (await control.tenant_claim(conn, name))[0]
    finally:
        await conn.close()
    async with _tenant_client(admin_service, name, created["api_key"]) as client:
        assert (await client.get("/stats")).status_code in (401, 404)
    again = (await admin.delete(f"/tenants/{name}")).json()
    assert again["complete"] and again["removed"]["query_cache"] == 0 and "erased before" in again["notes"][0]
    assert (await admin.delete(f"/tenants/{unique_tenant('none')}")).status_code == 404
    reborn = await _create(admin, name)  # the name is free again, and the new tenant is empty
    async with _tenant_client(admin_service, name, reborn["api_key"]) as client:
        assert (await client.get("/memories", params={"status": ["active", "forgotten", "superseded"]})).json()[
            "items"
        ] == []
    assert (await admin.delete(f"/tenants/{name}")).json()["notes"] == []


async def test_a_tenant_the_operator_manages_is_not_deleted_here(admin, engram):
    name = unique_tenant("adm")
    await engram.tenants.create(name)
    holder = f"k8s:kind/shop/{name}"
    async with engram.pool.acquire() as conn:
        await control.transfer_claim(conn, name, holder)
    listed = {t["name"]: t for t in (await admin.get("/tenants")).json()["tenants"]}
    assert listed[name]["managed_by"] == holder
    refused = await admin.delete(f"/tenants/{name}")
    assert refused.status_code == 409 and holder in refused.json()["error"]["message"]
    assert (await engram.tenants.resolve(name)).name == name


def test_the_cli_deletes_a_tenant_and_asks_first(cli_env):  # noqa: F811
    name = unique_tenant("adm")
    assert run_cli(cli_env, "tenant", "create", name, "--environment", "test").returncode == 0
    wrong = run_cli(cli_env, "tenant", "create", unique_tenant("adm"), "--environment", "prod")
    assert wrong.returncode == 2 and "refusing" in wrong.stderr
    kept = run_cli(cli_env, "tenant", "delete", name)  # no --yes, and no answer on stdin
    assert kept.returncode == 1 and name in run_cli(cli_env, "tenant", "list").stdout
    deleted = run_cli(cli_env, "tenant", "delete", name, "--yes")
    assert deleted.returncode == 0, deleted.stderr
    receipt = json.loads(deleted.stdout)
    assert receipt["complete"] and receipt["tenant"] == name and receipt["removed"]["api_keys"] == 1
    assert name not in run_cli(cli_env, "tenant", "list").stdout
    missing = run_cli(cli_env, "tenant", "delete", unique_tenant("none"), "--yes")
    assert missing.returncode == 2 and "not found" in missing.stderr
