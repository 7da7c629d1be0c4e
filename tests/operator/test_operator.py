"""The operator end to end: kopf against the Kubernetes emulator and two real PostgreSQL servers
(labelled test and prod). A test plays kubectl and the Deployment controller; the operator does
the rest, as it would in a cluster."""

import uuid

import asyncpg
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.settings import Settings
from engram_operator.manifests import secret_values
from tests.conftest import ServerThread
from tests.operator.harness import Cluster, eventually

CHILDREN = {
    "v1/secrets": "engram-{}-credentials",
    "apps/v1/deployments": "engram-{}",
    "v1/services": "engram-{}",
    "batch/v1/cronjobs": "engram-{}-lifecycle",
}


def name(prefix: str = "mt") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def condition(tenant: dict, kind: str) -> dict:
    return next((c for c in (tenant.get("status") or {}).get("conditions", []) if c["type"] == kind), {})


def phase(cluster: Cluster, namespace: str, tenant: str) -> str | None:
    live = cluster.tenant(namespace, tenant)
    return (live.get("status") or {}).get("phase") if live else None


async def ready_tenant(cluster: Cluster, namespace: str, tenant: str, spec: dict) -> dict:
    await cluster.apply_tenant(namespace, tenant, spec)
    await eventually(lambda: condition(cluster.tenant(namespace, tenant), "Provisioned").get("status") == "True")
    await cluster.play_deployment_controller(namespace, f"engram-{tenant}")
    await eventually(lambda: phase(cluster, namespace, tenant) == "Ready", what="phase Ready")
    return cluster.tenant(namespace, tenant)


def credentials(cluster: Cluster, namespace: str, tenant: str) -> dict[str, str]:
    return secret_values(cluster.get("v1/secrets", namespace, f"engram-{tenant}-credentials"))


async def test_a_tenant_becomes_ready_with_its_children_and_serves_mcp(operator, cluster):
    tenant = name()
    live = await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    uid = live["metadata"]["uid"]
    for resource, child in CHILDREN.items():
        obj = cluster.get(resource, "agents", child.format(tenant))
        assert obj is not None, resource
        assert [r["uid"] for r in obj["metadata"]["ownerReferences"]] == [uid]
    status = live["status"]
    assert status["instance"] == "pg-test" and status["schema"] == f"tenant_{tenant.replace('-', '_')}"
    assert status["mcpUrl"] == f"http://engram-{tenant}.agents.svc:8080/t/{tenant}/mcp"
    assert status["observedGeneration"] == 1
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Provisioned": "True",
        "Ready": "True",
        "Degraded": "False",
    }
    await eventually(lambda: {"Provisioned", "Created", "Ready"} <= cluster.reasons("agents", tenant))

    # The pod's view: the Secret's DSN and key run the real service, and an MCP client uses it.
    secret = credentials(cluster, "agents", tenant)
    settings = Settings(database_url=secret["dsn"], environment="test", tenant=tenant)
    with ServerThread(settings, secret["dsn"]) as server:
        headers = {"Authorization": f"Bearer {secret['api-key']}"}
        url = f"{server.url}/t/{tenant}/mcp"
        async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers))) as client:
            written = await client.call_tool("write_memory", {"content": "The user prefers SF Express"})
            assert not written.is_error, written
            found = await client.call_tool("search_memory", {"query": "SF Express"})
            assert found.structured_content["hits"]


async def test_tenant_roles_cannot_read_each_other(operator, cluster):
    a, b = name(), name()
    await cluster.apply_tenant("agents", a, {"environment": "test"})
    await cluster.apply_tenant("agents", b, {"environment": "test"})
    for tenant in (a, b):
        await eventually(lambda t=tenant: condition(cluster.tenant("agents", t), "Provisioned").get("status") == "True")
    conn = await asyncpg.connect(credentials(cluster, "agents", a)["dsn"])
    try:
        assert await conn.fetchval(f"SELECT count(*) FROM tenant_{a.replace('-', '_')}.memories") == 0
        try:
            await conn.fetch(f"SELECT * FROM tenant_{b.replace('-', '_')}.memories")
        except asyncpg.InsufficientPrivilegeError:
            pass
        else:
            raise AssertionError("tenant a read tenant b's schema")
    finally:
        await conn.close()
