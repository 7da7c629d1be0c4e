"""A tenant's identity survives the loss of its status: its placement is recorded on the resource
and in the database, a re-created resource finds its data again, a deletion without a status still
reaches its schema, a new tenant goes to the emptiest instance, and the claims name the cluster."""

import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import asyncpg
import pytest

from engram.domain.tenancy import schema_name
from engram.runtime import bootstrap_database
from engram_operator.config import Instance, OperatorConfig
from engram_operator.reconcile import INSTANCE
from tests.operator.conftest import CLUSTER_UID
from tests.operator.harness import TENANTS, Cluster, OperatorThread, eventually
from tests.operator.test_operator import condition, name, ready_tenant


@pytest.fixture
async def empty_instance(bootstrapped) -> AsyncIterator[Instance]:
    """A second test instance: a new database on the suite's server, labelled test, with no tenant."""
    database = f"engram_second_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(bootstrapped)
    await admin.execute(f'CREATE DATABASE "{database}"')
    dsn = urlsplit(bootstrapped)._replace(path=f"/{database}").geturl()
    await bootstrap_database(dsn, "test")
    try:
        yield Instance(name="pg-test-empty", environment="test", adminDsn=dsn)
    finally:
        await admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
        await admin.close()


async def claimed_by(instance: Instance, tenant: str) -> str | None:
    conn = await asyncpg.connect(instance.admin_dsn.get_secret_value())
    try:
        return await conn.fetchval("SELECT claimed_by FROM engram_control.tenants WHERE name = $1", tenant)
    finally:
        await conn.close()


async def schema_exists(instance: Instance, tenant: str) -> bool:
    conn = await asyncpg.connect(instance.admin_dsn.get_secret_value())
    try:
        return await conn.fetchval("SELECT to_regnamespace($1) IS NOT NULL", schema_name(tenant))
    finally:
        await conn.close()


def recorded(cluster: Cluster, tenant: str) -> tuple[str | None, str | None]:
    live = cluster.tenant("agents", tenant) or {}
    annotated = (live.get("metadata", {}).get("annotations") or {}).get(INSTANCE)
    return annotated, (live.get("status") or {}).get("instance")


async def forget_placement(cluster: Cluster, tenant: str) -> None:
    """What a restore without status, or a hand-edited resource, leaves: no record of the instance."""
    await cluster.patch(TENANTS, "agents", tenant, {"metadata": {"annotations": {INSTANCE: None}}})
    await cluster.patch(TENANTS, "agents", tenant, {"status": {"instance": None}}, "/status")


async def test_a_new_tenant_goes_to_the_emptiest_instance_and_the_claim_names_the_cluster(
    emulator, cluster, test_instance, empty_instance
):
    config = OperatorConfig(image="engram:test", instances=[test_instance, empty_instance], driftIntervalSeconds=1)
    async with OperatorThread(config):
        pinned = name()
        await ready_tenant(cluster, "agents", pinned, {"environment": "test", "database": {"instance": "pg-test"}})
        assert recorded(cluster, pinned) == ("pg-test", "pg-test")
        tenant = name()  # pg-test holds one tenant at least, pg-test-empty none
        await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
        assert recorded(cluster, tenant) == ("pg-test-empty", "pg-test-empty")
        assert await claimed_by(empty_instance, tenant) == f"k8s:{CLUSTER_UID}/agents/{tenant}"
        assert await claimed_by(test_instance, tenant) is None


async def test_a_full_instance_takes_no_new_tenant_and_a_tenant_waits_when_every_one_is_full(
    emulator, cluster, test_instance, empty_instance
):
    """maxTenants: the emptiest instance is passed over once it holds its share; with no instance
    of the environment left with room, the tenant waits (retried) and says why."""
    small = empty_instance.model_copy(update={"max_tenants": 1})
    config = OperatorConfig(image="engram:test", instances=[test_instance, small], driftIntervalSeconds=1)
    async with OperatorThread(config):
        pinned, first, second = name(), name(), name()
        await ready_tenant(cluster, "agents", pinned, {"environment": "test", "database": {"instance": "pg-test"}})
        await ready_tenant(cluster, "agents", first, {"environment": "test"})
        assert recorded(cluster, first) == ("pg-test-empty", "pg-test-empty")
        await ready_tenant(cluster, "agents", second, {"environment": "test"})
        assert recorded(cluster, second) == ("pg-test", "pg-test")  # pg-test-empty is full, not busier
    only_small = OperatorConfig(image="engram:test", instances=[small], driftIntervalSeconds=1)
    async with OperatorThread(only_small):
        waiting = name()
        await cluster.apply_tenant("agents", waiting, {"environment": "test"})
        await eventually(
            lambda: (
                "pg-test-empty 1/1" in condition(cluster.tenant("agents", waiting), "Provisioned").get("message", "")
            ),
            what="the tenant says every instance is full",
        )
        assert condition(cluster.tenant("agents", waiting), "Provisioned")["reason"] == "Retrying"
        assert recorded(cluster, waiting) == (None, None)
        assert not await schema_exists(small, waiting)


async def test_a_recreated_tenant_finds_its_data_where_it_lives_not_where_a_new_one_would_go(
    emulator, cluster, test_instance, empty_instance
):
    tenant = name()
    only_busy = OperatorConfig(image="engram:test", instances=[test_instance], driftIntervalSeconds=1)
    async with OperatorThread(only_busy):
        await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
        assert recorded(cluster, tenant) == ("pg-test", "pg-test")
        # A restore that lost the status and the annotation (the default deletion policy, Retain,
        # keeps the schema when the resource goes and comes back).
        await cluster.delete(TENANTS, "agents", tenant)
        await eventually(lambda: cluster.tenant("agents", tenant) is None, what="the tenant deleted")
    both = OperatorConfig(image="engram:test", instances=[test_instance, empty_instance], driftIntervalSeconds=1)
    async with OperatorThread(both):
        await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
        assert recorded(cluster, tenant) == ("pg-test", "pg-test")  # the emptiest would have been pg-test-empty
        assert not await schema_exists(empty_instance, tenant)
        # The status is lost again while the operator runs: the annotation says where it lives.
        await cluster.patch(TENANTS, "agents", tenant, {"status": {"instance": None}}, "/status")
        await eventually(lambda: recorded(cluster, tenant) == ("pg-test", "pg-test"), what="status.instance back")
        assert not await schema_exists(empty_instance, tenant)


async def test_a_tenant_deleted_without_any_record_of_its_placement_still_drops_its_schema(
    emulator, cluster, test_instance, empty_instance
):
    config = OperatorConfig(image="engram:test", instances=[empty_instance, test_instance], driftIntervalSeconds=60)
    async with OperatorThread(config):
        tenant = name()
        await ready_tenant(cluster, "agents", tenant, {"environment": "test", "deletionPolicy": "Delete"})
        assert recorded(cluster, tenant) == ("pg-test-empty", "pg-test-empty")
        await forget_placement(cluster, tenant)
        assert recorded(cluster, tenant) == (None, None)
        await cluster.delete(TENANTS, "agents", tenant)
        await eventually(lambda: cluster.tenant("agents", tenant) is None, what="the tenant deleted")
        assert not await schema_exists(empty_instance, tenant)
        assert await claimed_by(empty_instance, tenant) is None


async def test_an_annotation_pointing_elsewhere_than_the_tenant_lives_is_refused(
    emulator, cluster, test_instance, empty_instance
):
    config = OperatorConfig(image="engram:test", instances=[test_instance, empty_instance], driftIntervalSeconds=1)
    async with OperatorThread(config):
        tenant = name()
        await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
        await cluster.patch(TENANTS, "agents", tenant, {"metadata": {"annotations": {INSTANCE: "pg-test"}}})

        def refused() -> bool:
            conditions = (cluster.tenant("agents", tenant).get("status") or {}).get("conditions", [])
            provisioned = next(c for c in conditions if c["type"] == "Provisioned")
            return provisioned["status"] == "False" and "moving a tenant is not supported" in provisioned["message"]

        await eventually(refused, what="the move refused")
        assert not await schema_exists(test_instance, tenant)
