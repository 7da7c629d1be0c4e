"""Provisioning against two real PostgreSQL servers, one labelled test and one prod."""

import asyncio
import secrets
import uuid
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg
import pytest

from engram.domain.models import NewMemory
from engram.domain.search import SearchRequest
from engram.runtime import engram_session
from engram.settings import Settings
from engram_operator.config import Instance
from engram_operator.manifests import DATABASE_CA_PATH
from engram_operator.placement import PlacementError
from engram_operator.provision import (
    Claim,
    drop_tenant,
    ensure_tenant,
    retire_tenant,
    role_name,
    survey,
    tenant_dsn,
)
from tests.operator.harness import catalog_footprint

MODEL, DIM = "use-multilingual-v3", 512
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def name() -> str:
    return f"op-{uuid.uuid4().hex[:8]}"


def claim(tenant: str, cluster: str = "cluster-a") -> Claim:
    return Claim(f"k8s:{cluster}/agents/{tenant}", former=f"k8s:agents/{tenant}")


async def provision(instance: Instance, tenant: str, key: str | None = None, owner: Claim | None = None):
    password = secrets.token_urlsafe(16)
    return await ensure_tenant(
        instance, tenant, MODEL, DIM, password, key or f"ek.{tenant}.secret", owner or claim(tenant)
    )


async def test_the_service_runs_on_a_provisioned_tenant_with_its_own_role(test_instance):
    tenant = name()
    provisioned = await provision(test_instance, tenant, f"ek.{tenant}.k1")
    assert provisioned.role == role_name(tenant) and provisioned.instance == "pg-test"
    single = Settings(database_url=provisioned.dsn, environment="test", tenant=tenant)
    async with engram_session(single, provisioned.dsn) as engram:
        ctx = await engram.tenants.authenticate(tenant, f"ek.{tenant}.k1")
        await engram.writes.write(ctx, NewMemory(content="用户偏好顺丰快递"))
        assert (await engram.search.search(ctx, SearchRequest(query="快递"))).hits


async def test_provisioning_is_idempotent_and_rotates_the_key(test_instance):
    tenant = name()
    first = await provision(test_instance, tenant, f"ek.{tenant}.one")
    again = await provision(test_instance, tenant, f"ek.{tenant}.two")
    assert (first.schema, first.role) == (again.schema, again.role)
    async with engram_session(Settings(database_url=again.dsn, tenant=tenant), again.dsn) as engram:
        await engram.tenants.authenticate(tenant, f"ek.{tenant}.two")
        with pytest.raises(Exception, match="invalid API key"):
            await engram.tenants.authenticate(tenant, f"ek.{tenant}.one")


async def test_a_tenant_role_cannot_read_another_tenants_schema(test_instance):
    a, b = await provision(test_instance, name()), await provision(test_instance, name())
    conn = await asyncpg.connect(a.dsn)
    try:
        assert await conn.fetchval(f'SELECT count(*) FROM "{a.schema}".memories') == 0
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch(f'SELECT * FROM "{b.schema}".memories')
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("CREATE TABLE public.squatter (id int)")
        assert not await conn.fetchval("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user")
    finally:
        await conn.close()


async def test_a_test_instance_pointing_at_the_prod_server_is_refused(prod_dsn):
    misconfigured = Instance(name="pg-test", environment="test", adminDsn=prod_dsn)
    tenant = name()
    with pytest.raises(PlacementError, match="labelled prod"):
        await provision(misconfigured, tenant)
    conn = await asyncpg.connect(prod_dsn)
    try:
        assert not await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)", role_name(tenant)
        )
    finally:
        await conn.close()


async def test_an_unlabelled_database_is_refused(prod_dsn):
    conn = await asyncpg.connect(prod_dsn)
    try:
        await conn.execute("DROP DATABASE IF EXISTS unlabelled")
        await conn.execute("CREATE DATABASE unlabelled")
    finally:
        await conn.close()
    unlabelled = Instance(name="pg-x", environment="prod", adminDsn=prod_dsn.rsplit("/", 1)[0] + "/unlabelled")
    with pytest.raises(PlacementError, match="no environment label"):
        await provision(unlabelled, name())


@pytest.mark.parametrize(
    ("rights", "lacks", "has"),
    [
        ("NOSUPERUSER NOCREATEROLE", ["CREATEROLE", "CREATE on database postgres"], []),
        ("NOSUPERUSER CREATEROLE", ["CREATE on database postgres"], ["CREATEROLE"]),
    ],
)
async def test_an_admin_role_without_the_rights_is_refused_naming_each_one(prod_dsn, rights, lacks, has):
    weak = f"weak_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(prod_dsn)
    try:
        await conn.execute(f"CREATE ROLE {weak} LOGIN PASSWORD 'weak' {rights}")
        await conn.execute(f"REVOKE CREATE ON DATABASE postgres FROM {weak}, PUBLIC")
        parts = urlsplit(prod_dsn)
        dsn = urlunsplit(parts._replace(netloc=f"{weak}:weak@{parts.hostname}:{parts.port}", path="/postgres"))
        tenant = name()
        with pytest.raises(PlacementError) as refused:
            await provision(Instance(name="pg-weak", environment="prod", adminDsn=dsn), tenant)
        message = str(refused.value)
        assert message.startswith("the admin role of instance 'pg-weak' lacks: ")
        assert all(right in message for right in lacks) and not any(right in message for right in has), message
        assert not await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)", role_name(tenant)
        )
    finally:
        await conn.execute(f"DROP ROLE IF EXISTS {weak}")
        await conn.close()


async def test_an_existing_role_is_never_adopted(test_instance):
    tenant = name()
    conn = await asyncpg.connect(test_instance.admin_dsn.get_secret_value())
    try:
        await conn.execute(f'CREATE ROLE "{role_name(tenant)}"')
    finally:
        await conn.close()
    with pytest.raises(PlacementError, match="refusing to adopt"):
        await provision(test_instance, tenant)


async def test_delete_drops_schema_and_role(prod_instance, prod_dsn):
    tenant = name()
    provisioned = await provision(prod_instance, tenant)
    await drop_tenant(prod_instance, tenant, claim(tenant))
    conn = await asyncpg.connect(prod_dsn)
    try:
        assert await conn.fetchval("SELECT to_regnamespace($1)", provisioned.schema) is None
        assert not await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)", provisioned.role
        )
    finally:
        await conn.close()


async def test_a_name_held_by_another_owner_is_refused(test_instance):
    tenant = name()
    await provision(test_instance, tenant)
    elsewhere = Claim(f"k8s:cluster-a/elsewhere/{tenant}", former=f"k8s:elsewhere/{tenant}")
    with pytest.raises(PlacementError, match=f"belongs to k8s:cluster-a/agents/{tenant}"):
        await provision(test_instance, tenant, owner=elsewhere)
    with pytest.raises(PlacementError, match="belongs to"):
        await drop_tenant(test_instance, tenant, elsewhere)


async def test_another_cluster_sharing_the_server_cannot_take_or_revoke_a_tenant(test_instance):
    tenant = name()
    first = await provision(test_instance, tenant, f"ek.{tenant}.mine")
    with pytest.raises(PlacementError, match=f"belongs to k8s:cluster-a/agents/{tenant}"):
        await provision(test_instance, tenant, f"ek.{tenant}.theirs", owner=claim(tenant, cluster="cluster-b"))
    with pytest.raises(PlacementError, match="belongs to"):
        await retire_tenant(test_instance, tenant, claim(tenant, cluster="cluster-b"))
    async with engram_session(Settings(database_url=first.dsn, tenant=tenant), first.dsn) as engram:
        await engram.tenants.authenticate(tenant, f"ek.{tenant}.mine")  # still valid: nothing revoked


async def test_a_claim_from_before_cluster_ids_is_taken_over_by_its_own_tenant(test_instance):
    tenant = name()
    admin = await asyncpg.connect(test_instance.admin_dsn.get_secret_value())
    try:
        await provision(test_instance, tenant)
        await admin.execute(
            "UPDATE engram_control.tenants SET claimed_by = $2 WHERE name = $1", tenant, f"k8s:agents/{tenant}"
        )
        found = await survey(test_instance, tenant, claim(tenant))
        assert found.holds_tenant and found.tenants >= 1
        await provision(test_instance, tenant)
        assert (
            await admin.fetchval("SELECT claimed_by FROM engram_control.tenants WHERE name = $1", tenant)
            == f"k8s:cluster-a/agents/{tenant}"
        )
        assert not (await survey(test_instance, tenant, claim(tenant, cluster="cluster-b"))).holds_tenant
    finally:
        await admin.close()


async def test_a_retired_tenant_keeps_its_data_but_cannot_log_in_until_it_returns(test_instance):
    tenant = name()
    first = await provision(test_instance, tenant, f"ek.{tenant}.one")
    await retire_tenant(test_instance, tenant, claim(tenant))
    with pytest.raises(asyncpg.InvalidAuthorizationSpecificationError):
        await asyncpg.connect(first.dsn)
    back = await provision(test_instance, tenant, f"ek.{tenant}.two")
    conn = await asyncpg.connect(back.dsn)
    try:
        assert await conn.fetchval(f'SELECT count(*) FROM "{back.schema}".api_keys WHERE revoked_at IS NULL') == 1
    finally:
        await conn.close()


async def test_a_repair_leaves_the_role_alone_but_unlocks_a_locked_one(test_instance):
    tenant, password = name(), secrets.token_urlsafe(16)
    args = (test_instance, tenant, MODEL, DIM, password, f"ek.{tenant}.k", claim(tenant))
    first = await ensure_tenant(*args)
    admin = await asyncpg.connect(test_instance.admin_dsn.get_secret_value())
    try:
        version = "SELECT xmin::text FROM pg_catalog.pg_authid WHERE rolname = $1"
        before = await admin.fetchval(version, first.role)
        await ensure_tenant(*args, new_password=False)
        assert await admin.fetchval(version, first.role) == before  # no catalog write, no new hash
        await retire_tenant(test_instance, tenant, claim(tenant))
        await ensure_tenant(*args, new_password=False)
        assert await admin.fetchval(version, first.role) != before
    finally:
        await admin.close()
    conn = await asyncpg.connect(first.dsn)  # unlocked, with the password it had
    await conn.close()


async def test_fifty_tenants_provisioned_at_once_then_repaired_at_once_write_nothing_the_second_time(test_instance):
    # An operator restart resumes every tenant at once: the first provisionings race, and so do
    # the repairs that follow. Each tenant's work is serialised in the database; the catalog rows
    # all tenants share are written only when a grant is missing.
    tenants = [name() for _ in range(50)]
    passwords = {t: secrets.token_urlsafe(16) for t in tenants}

    async def reconcile(tenant: str, *, new_password: bool) -> None:
        await ensure_tenant(
            test_instance,
            tenant,
            MODEL,
            DIM,
            passwords[tenant],
            f"ek.{tenant}.k",
            claim(tenant),
            new_password=new_password,
        )

    first = await asyncio.gather(*(reconcile(t, new_password=True) for t in tenants), return_exceptions=True)
    assert [e for e in first if e is not None] == []
    admin = await asyncpg.connect(test_instance.admin_dsn.get_secret_value())
    try:
        before = await catalog_footprint(admin, tenants)
        again = await asyncio.gather(*(reconcile(t, new_password=False) for t in tenants), return_exceptions=True)
        assert [e for e in again if e is not None] == []
        after = await catalog_footprint(admin, tenants)
    finally:
        await admin.close()
    assert len(before) > 50 * 4
    assert {k: (before[k], after.get(k)) for k in before if after.get(k) != before[k]} == {}


async def test_one_tenant_reconciled_by_five_at_once_is_provisioned_once(test_instance):
    # A stuck pod and its replacement, or a local run beside the cluster's operator: the tenant's
    # own lock in the database makes them take turns, and the last key given is the valid one.
    tenant, password = name(), secrets.token_urlsafe(16)
    keys = [f"ek.{tenant}.k{i}" for i in range(5)]
    results = await asyncio.gather(
        *(ensure_tenant(test_instance, tenant, MODEL, DIM, password, key, claim(tenant)) for key in keys),
        return_exceptions=True,
    )
    assert [r for r in results if isinstance(r, BaseException)] == []
    admin = await asyncpg.connect(test_instance.admin_dsn.get_secret_value())
    try:
        valid = await admin.fetchval(f'SELECT count(*) FROM "{results[0].schema}".api_keys WHERE revoked_at IS NULL')
        registered = await admin.fetchval("SELECT count(*) FROM engram_control.tenants WHERE name = $1", tenant)
    finally:
        await admin.close()
    assert (valid, registered) == (1, 1)


def test_a_tenant_dsn_keeps_the_admin_dsns_connection_parameters_but_not_its_files():
    admin = "postgresql://admin:pw@db.internal:6432/app?sslmode=verify-full&sslrootcert=/etc/ca.crt&connect_timeout=5"
    plain = Instance(name="pg", environment="test", adminDsn=admin)
    dsn = urlsplit(tenant_dsn(plain, "engram_t_a", "p@ss/word"))
    assert (dsn.hostname, dsn.port, dsn.path, dsn.username) == ("db.internal", 6432, "/app", "engram_t_a")
    assert dict(parse_qsl(dsn.query)) == {"sslmode": "verify-full", "connect_timeout": "5"}
    with_ca = Instance(
        name="pg",
        environment="test",
        adminDsn=admin,
        tenantHost="db.svc:5432",
        tls={"mode": "verify-ca", "rootCert": CA},
    )
    dsn = urlsplit(tenant_dsn(with_ca, "engram_t_a", "pw"))
    assert (dsn.hostname, dsn.port) == ("db.svc", 5432)
    assert dict(parse_qsl(dsn.query)) == {
        "sslmode": "verify-ca",
        "sslrootcert": DATABASE_CA_PATH,
        "connect_timeout": "5",
    }


def test_a_socket_admin_dsn_needs_a_tenant_host():
    socket = Instance(name="pg", environment="test", adminDsn="postgresql:///app?host=/var/run/postgresql")
    with pytest.raises(PlacementError, match="tenantHost"):
        tenant_dsn(socket, "engram_t_a", "pw")
    routed = socket.model_copy(update={"tenant_host": "pg.databases.svc:5432"})
    assert urlsplit(tenant_dsn(routed, "engram_t_a", "pw")).query == ""


async def test_tenants_of_a_tls_only_server_connect_with_a_verified_certificate(tls_server, tls_instance):
    ca_file = tls_server[1]
    provisioned = await provision(tls_instance, name())
    dsn = urlsplit(provisioned.dsn)
    assert dict(parse_qsl(dsn.query)) == {"sslmode": "verify-full", "sslrootcert": DATABASE_CA_PATH}
    # The pod's view: the CA is mounted at DATABASE_CA_PATH; here it is the same file elsewhere.
    local = dsn._replace(query=urlencode({"sslmode": "verify-full", "sslrootcert": str(ca_file)})).geturl()
    conn = await asyncpg.connect(local)
    try:
        tls = conn._transport.get_extra_info("ssl_object")  # the client's side: verified against the CA
        assert tls is not None and tls.version().startswith("TLS")
        assert await conn.fetchval("SELECT current_user") == provisioned.role
    finally:
        await conn.close()
    # What tenants got before: the same DSN without its TLS parameters, refused by the server.
    with pytest.raises(asyncpg.InvalidAuthorizationSpecificationError):
        await asyncpg.connect(dsn._replace(query="sslmode=disable").geturl())


async def test_a_tenant_role_holds_at_most_its_connection_limit(test_instance):
    tenant, password = name(), secrets.token_urlsafe(16)
    args = (test_instance, tenant, MODEL, DIM, password, f"ek.{tenant}.k", claim(tenant))
    provisioned = await ensure_tenant(*args, connection_limit=2)
    held = [await asyncpg.connect(provisioned.dsn) for _ in range(2)]
    try:
        with pytest.raises(asyncpg.TooManyConnectionsError):
            await asyncpg.connect(provisioned.dsn)
    finally:
        for conn in held:
            await conn.close()
    admin = await asyncpg.connect(test_instance.admin_dsn.get_secret_value())
    try:
        limit = "SELECT rolconnlimit FROM pg_catalog.pg_roles WHERE rolname = $1"
        await ensure_tenant(*args, new_password=False, connection_limit=12)  # more replicas: raised in place
        assert await admin.fetchval(limit, provisioned.role) == 12
        before = await catalog_footprint(admin, [tenant])
        await ensure_tenant(*args, new_password=False, connection_limit=12)
        assert await catalog_footprint(admin, [tenant]) == before
    finally:
        await admin.close()
    (await asyncpg.connect(provisioned.dsn)).terminate()  # the password was left as it was


async def test_a_role_whose_password_drifted_from_the_secret_takes_the_secrets_again(test_instance):
    # A Secret restored from an older backup holds another password than the role: the pods
    # would never log in again. A repair notices (the Secret's password is refused) and resets it.
    tenant, password = name(), secrets.token_urlsafe(16)
    args = (test_instance, tenant, MODEL, DIM, password, f"ek.{tenant}.k", claim(tenant))
    provisioned = await ensure_tenant(*args)
    admin = await asyncpg.connect(test_instance.admin_dsn.get_secret_value())
    try:
        await admin.execute(f"ALTER ROLE \"{provisioned.role}\" PASSWORD '{secrets.token_urlsafe(16)}'")
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(provisioned.dsn)
        await ensure_tenant(*args, new_password=False)
    finally:
        await admin.close()
    (await asyncpg.connect(provisioned.dsn)).terminate()
