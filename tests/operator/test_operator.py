"""The operator end to end: kopf against the Kubernetes emulator and two real PostgreSQL servers
(labelled test and prod). A test plays kubectl and the Deployment controller; the operator does
the rest, as it would in a cluster."""

import asyncio
import re
import uuid
from urllib.parse import parse_qsl, urlsplit

import asyncpg
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram.domain.models import NewMemory
from engram.runtime import engram_session
from engram.settings import Settings
from engram_operator import metrics
from engram_operator.config import Instance, OperatorConfig
from engram_operator.manifests import DATABASE_CA_PATH, secret_values
from tests.conftest import ServerThread, free_port
from tests.operator.conftest import CLUSTER_UID
from tests.operator.harness import Cluster, OperatorThread, catalog_footprint, eventually

CHILDREN = (
    ("v1/secrets", "engram-{}-database"),
    ("v1/secrets", "engram-{}-client"),
    ("apps/v1/deployments", "engram-{}"),
    ("v1/services", "engram-{}"),
    ("batch/v1/cronjobs", "engram-{}-lifecycle"),
)


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
    """What the tenant's pods get (the database Secret) and what its agents get (the client Secret)."""
    database = secret_values(cluster.get("v1/secrets", namespace, f"engram-{tenant}-database"))
    return database | secret_values(cluster.get("v1/secrets", namespace, f"engram-{tenant}-client"))


async def test_a_tenant_becomes_ready_with_its_children_and_serves_mcp(operator, cluster):
    tenant = name()
    live = await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    uid = live["metadata"]["uid"]
    for resource, child in CHILDREN:
        obj = cluster.get(resource, "agents", child.format(tenant))
        assert obj is not None, resource
        assert [r["uid"] for r in obj["metadata"]["ownerReferences"]] == [uid]
    status = live["status"]
    assert status["instance"] == "pg-test" and status["schema"] == f"tenant_{tenant.replace('-', '_')}"
    assert status["mcpUrl"] == f"http://engram-{tenant}.agents.svc:8080/t/{tenant}/mcp"
    assert status["observedGeneration"] == 1 and "kopf" not in status
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Provisioned": "True",
        "Ready": "True",
        "Degraded": "False",
        "Reconciling": "False",
        "Stalled": "False",
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


async def test_a_restarted_operator_resumes_without_changing_anything(emulator, cluster, operator_config):
    tenant = name()
    async with OperatorThread(operator_config):
        await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
        before = cluster.get("v1/secrets", "agents", f"engram-{tenant}-database")
    seen = len(emulator.requests())
    secret = Cluster.path("v1/secrets", "agents", f"engram-{tenant}-database")

    def since_restart(method: str) -> list:
        return [r for r in emulator.requests()[seen:] if r.method.value == method]

    async with OperatorThread(operator_config):
        # Read twice: once on resume, once by a drift check.
        await eventually(lambda: len([r for r in since_restart("GET") if r.url.path == secret]) >= 2)
    changes = [r.url.path for r in since_restart("POST") + since_restart("PATCH") if "/events" not in r.url.path]
    assert changes == [], changes
    assert cluster.get("v1/secrets", "agents", f"engram-{tenant}-database") == before
    assert phase(cluster, "agents", tenant) == "Ready"


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


async def test_an_update_reaches_the_children(operator, cluster):
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    spec = {
        "replicas": 2,
        "retrieval": {"weights": {"vector": 0.7}, "topK": 8},
        "forgetting": {"schedule": "0 4 * * *"},
        "networkPolicy": {"enabled": True},
    }
    await cluster.patch("memory.engram.dev/v1alpha1/memorytenants", "agents", tenant, {"spec": spec})

    def updated():
        deployment = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")
        cronjob = cluster.get("batch/v1/cronjobs", "agents", f"engram-{tenant}-lifecycle")
        env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        return (
            deployment["spec"]["replicas"] == 2
            and env.get("ENGRAM_RETRIEVAL__VECTOR_WEIGHT") == "0.7"
            and env.get("ENGRAM_RETRIEVAL__DEFAULT_TOP_K") == "8"
            and cronjob["spec"]["schedule"] == "0 4 * * *"
            and cluster.get("networking.k8s.io/v1/networkpolicies", "agents", f"engram-{tenant}") is not None
        )

    await eventually(updated, what="the new spec in the Deployment, CronJob and NetworkPolicy")
    await eventually(lambda: cluster.tenant("agents", tenant)["status"]["observedGeneration"] == 2)
    # Until the controller reports the new replica set, the tenant is not fully available.
    await cluster.play_deployment_controller("agents", f"engram-{tenant}")
    await eventually(lambda: phase(cluster, "agents", tenant) == "Ready")

    await cluster.patch("memory.engram.dev/v1alpha1/memorytenants", "agents", tenant, {"spec": {"networkPolicy": None}})
    await eventually(lambda: cluster.get("networking.k8s.io/v1/networkpolicies", "agents", f"engram-{tenant}") is None)


async def refused(cluster: Cluster, namespace: str, tenant: str, match: str) -> None:
    """Refused in status (phase Failed, Provisioned False with the reason) and in a Warning event;
    nothing was built."""
    await eventually(lambda: phase(cluster, namespace, tenant) == "Failed", what="phase Failed")
    provisioned = condition(cluster.tenant(namespace, tenant), "Provisioned")
    assert provisioned["status"] == "False" and match in provisioned["message"], provisioned
    assert condition(cluster.tenant(namespace, tenant), "Stalled")["status"] == "True"  # kstatus: needs a change
    await eventually(
        lambda: any(e["type"] == "Warning" and match in e["message"] for e in cluster.events(namespace, tenant)),
        what="a Warning event",
    )
    for secret in ("database", "client"):
        assert cluster.get("v1/secrets", namespace, f"engram-{tenant}-{secret}") is None
    assert cluster.get("apps/v1/deployments", namespace, f"engram-{tenant}") is None


async def role_exists(dsn: str, tenant: str) -> bool:
    conn = await asyncpg.connect(dsn)
    try:
        role = "engram_t_" + tenant.replace("-", "_")
        return await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", role)
    finally:
        await conn.close()


async def test_a_tenant_asking_for_the_other_environments_instance_is_refused(operator, cluster, prod_dsn):
    tenant = name()
    await cluster.apply_tenant("agents", tenant, {"environment": "test", "database": {"instance": "pg-prod"}})
    await refused(cluster, "agents", tenant, "serves prod")
    assert not await role_exists(prod_dsn, tenant)


async def test_a_test_instance_whose_dsn_points_at_the_prod_server_is_refused(emulator, cluster, prod_dsn):
    misdirected = OperatorConfig(
        image="engram:test",
        instances=[Instance(name="pg-test", environment="test", adminDsn=prod_dsn)],
        driftIntervalSeconds=1,
    )
    async with OperatorThread(misdirected):
        tenant = name()
        await cluster.apply_tenant("agents", tenant, {"environment": "test"})
        await refused(cluster, "agents", tenant, "labelled prod")
    assert not await role_exists(prod_dsn, tenant)


async def test_the_same_name_in_another_namespace_does_not_get_the_schema(operator, cluster):
    tenant = name()
    await cluster.apply_tenant("team-a", tenant, {"environment": "test"})
    await eventually(lambda: condition(cluster.tenant("team-a", tenant), "Provisioned").get("status") == "True")
    await cluster.apply_tenant("team-b", tenant, {"environment": "test"})
    await refused(cluster, "team-b", tenant, f"belongs to k8s:{CLUSTER_UID}/team-a/{tenant}")


async def test_an_invalid_spec_is_refused(operator, cluster):
    tenant = name()
    await cluster.apply_tenant("agents", tenant, {"environment": "test", "embedding": {"model": "litellm:openai/x"}})
    await refused(cluster, "agents", tenant, "spec.embedding.dimension is required")


async def test_an_unreachable_database_is_retried_with_backoff(emulator, cluster):
    down = OperatorConfig(
        image="engram:test",
        instances=[Instance(name="pg-test", environment="test", adminDsn=f"postgresql://x@127.0.0.1:{free_port()}/x")],
    )
    async with OperatorThread(down):
        tenant = name()
        await cluster.apply_tenant("agents", tenant, {"environment": "test"})
        await eventually(lambda: condition(cluster.tenant("agents", tenant), "Provisioned").get("reason") == "Retrying")
        assert phase(cluster, "agents", tenant) == "Provisioning"
        assert re.search(r"retrying in [345]s", condition(cluster.tenant("agents", tenant), "Provisioned")["message"])
        await eventually(lambda: "Retrying" in cluster.reasons("agents", tenant))


async def memory_count(dsn: str, schema: str) -> int | None:
    conn = await asyncpg.connect(dsn)
    try:
        if await conn.fetchval("SELECT to_regnamespace($1)", schema) is None:
            return None
        return await conn.fetchval(f'SELECT count(*) FROM "{schema}".memories')
    finally:
        await conn.close()


async def write_one_memory(dsn: str, tenant: str, key: str) -> None:
    async with engram_session(Settings(database_url=dsn, environment="test", tenant=tenant), dsn) as engram:
        ctx = await engram.tenants.authenticate(tenant, key)
        await engram.writes.write(ctx, NewMemory(content="用户偏好顺丰快递"))


async def test_retain_keeps_the_data_and_the_tenant_can_come_back(operator, cluster, bootstrapped):
    tenant = name()
    live = await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    secret = credentials(cluster, "agents", tenant)
    await write_one_memory(secret["dsn"], tenant, secret["api-key"])

    await cluster.delete("memory.engram.dev/v1alpha1/memorytenants", "agents", tenant)
    await eventually(lambda: cluster.tenant("agents", tenant) is None, what="the finalizer released")
    for resource, child in CHILDREN:
        assert cluster.get(resource, "agents", child.format(tenant)) is None, resource
    assert await memory_count(bootstrapped, live["status"]["schema"]) == 1
    with pytest.raises(asyncpg.InvalidAuthorizationSpecificationError):
        await asyncpg.connect(secret["dsn"])  # retained, not open
    await eventually(lambda: "Deleted" in cluster.reasons("agents", tenant))

    await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    back = credentials(cluster, "agents", tenant)
    assert back["api-key"] != secret["api-key"]
    assert await memory_count(back["dsn"], live["status"]["schema"]) == 1


async def test_delete_drops_the_schema_and_the_role(operator, cluster, prod_dsn):
    tenant = name()
    live = await ready_tenant(cluster, "agents", tenant, {"environment": "prod", "deletionPolicy": "Delete"})
    assert live["status"]["instance"] == "pg-prod"
    assert await memory_count(prod_dsn, live["status"]["schema"]) == 0
    await cluster.delete("memory.engram.dev/v1alpha1/memorytenants", "agents", tenant)
    await eventually(lambda: cluster.tenant("agents", tenant) is None, what="the finalizer released")
    assert await memory_count(prod_dsn, live["status"]["schema"]) is None
    assert not await role_exists(prod_dsn, tenant)


async def test_drift_is_repaired(operator, cluster, bootstrapped):
    tenant = name()
    live = await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    deployment = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")
    await cluster.delete("apps/v1/deployments", "agents", f"engram-{tenant}")
    tampered = {"spec": {"selector": {"app.kubernetes.io/instance": "someone-else"}}}
    await cluster.patch("v1/services", "agents", f"engram-{tenant}", tampered)
    conn = await asyncpg.connect(bootstrapped)
    try:
        await conn.execute(f'DROP SCHEMA "{live["status"]["schema"]}" CASCADE')
    finally:
        await conn.close()

    await eventually(lambda: phase(cluster, "agents", tenant) == "Degraded", what="the missing Deployment noticed")

    def repaired():
        again = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")
        service = cluster.get("v1/services", "agents", f"engram-{tenant}")
        return (
            again
            and again["metadata"]["uid"] != deployment["metadata"]["uid"]
            and service["spec"]["selector"]["app.kubernetes.io/instance"] == tenant
        )

    await eventually(repaired, what="the Deployment re-created and the Service restored")
    assert await memory_count(bootstrapped, live["status"]["schema"]) == 0  # the schema is back (empty)

    def repair_events() -> bool:
        drift = [e["message"] for e in cluster.events("agents", tenant) if e["reason"] == "DriftRepaired"]
        return any("Deployment/" in m for m in drift) and any("Service/" in m for m in drift)

    await eventually(repair_events, what="DriftRepaired events for the Deployment and the Service")
    await cluster.play_deployment_controller("agents", f"engram-{tenant}")
    await eventually(lambda: phase(cluster, "agents", tenant) == "Ready")


async def test_tenants_created_at_once_then_a_restart_fail_nothing_and_write_nothing(
    emulator, cluster, operator_config
):
    # Twenty through the emulator (fifty at once against the database: test_provision.py).
    tenants = [name("bulk") for _ in range(20)]
    async with OperatorThread(operator_config):
        await asyncio.gather(*(cluster.apply_tenant("agents", t, {"environment": "test"}) for t in tenants))
        await eventually(
            lambda: all(condition(cluster.tenant("agents", t), "Provisioned").get("status") == "True" for t in tenants),
            timeout=120,
            what="every tenant provisioned",
        )
    admin = await asyncpg.connect(operator_config.instances[0].admin_dsn.get_secret_value())
    try:
        before = await catalog_footprint(admin, tenants)
        seen = len(emulator.requests())

        def resumed(t: str) -> bool:  # a reconciliation reads the Deployment twice, the last time after the database
            deployment = Cluster.path("apps/v1/deployments", "agents", f"engram-{t}")
            reads = [r for r in emulator.requests()[seen:] if r.url.path == deployment and r.method.value == "GET"]
            return len(reads) >= 2

        async with OperatorThread(operator_config):  # resumes every tenant at once
            await eventually(lambda: all(resumed(t) for t in tenants), timeout=120, what="every tenant resumed")
        after = await catalog_footprint(admin, tenants)
    finally:
        await admin.close()
    assert {k: (before[k], after.get(k)) for k in before if after.get(k) != before[k]} == {}
    failures = {t: sorted(cluster.reasons("agents", t) & {"Retrying", "Refused"}) for t in tenants}
    assert {t: r for t, r in failures.items() if r} == {}


async def test_a_tls_instance_gives_its_tenants_a_verifying_dsn_and_the_ca_to_verify_with(
    emulator, cluster, tls_instance
):
    ca_pem = tls_instance.tls.root_cert
    config = OperatorConfig(image="engram:test", instances=[tls_instance], imagePullSecrets=["regcred"])
    async with OperatorThread(config):
        tenant = name()
        await cluster.apply_tenant("agents", tenant, {"environment": "test"})
        await eventually(lambda: condition(cluster.tenant("agents", tenant), "Provisioned").get("status") == "True")
    secret = credentials(cluster, "agents", tenant)
    assert secret["ca.crt"] == ca_pem
    assert dict(parse_qsl(urlsplit(secret["dsn"]).query)) == {"sslmode": "verify-full", "sslrootcert": DATABASE_CA_PATH}
    pod = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")["spec"]["template"]["spec"]
    assert [v["secret"]["secretName"] for v in pod["volumes"] if v["name"] == "database-ca"] == [
        f"engram-{tenant}-database"
    ]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]  # the operator's configuration reaches the pods


async def test_a_new_embedding_model_waits_for_a_reindex_and_says_so(operator, cluster):
    # The vectors stay those of the model they were made with: the pods keep it, and the tenant
    # says what to run, until `engram reindex` switches the stored model.
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    spec = {"embedding": {"model": "multilingual-e5-small"}}
    await cluster.patch("memory.engram.dev/v1alpha1/memorytenants", "agents", tenant, {"spec": spec})
    await eventually(lambda: "EmbeddingModelChangePending" in cluster.reasons("agents", tenant))
    provisioned = condition(cluster.tenant("agents", tenant), "Provisioned")
    assert f"engram reindex --tenant {tenant} --model multilingual-e5-small" in provisioned["message"]
    deployment = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["ENGRAM_EMBEDDING_MODEL"] == "use-multilingual-v3"


async def test_a_namespace_asking_for_an_environment_the_policy_does_not_give_it_is_refused(
    emulator, cluster, test_instance, prod_instance
):
    policy = {"namespaces": {"agents": ["test"]}, "default": []}
    config = OperatorConfig(image="engram:test", instances=[test_instance, prod_instance], environmentPolicy=policy)
    async with OperatorThread(config):
        prod, elsewhere, allowed = name(), name(), name()
        await cluster.apply_tenant("agents", prod, {"environment": "prod"})
        await refused(cluster, "agents", prod, "namespace 'agents' may not ask for the prod environment")
        refusals = {"namespace": "agents", "tenant": prod, "outcome": "refused"}
        assert metrics.REGISTRY.get_sample_value("engram_operator_reconcile_errors_total", refusals) >= 1
        await cluster.apply_tenant("team-b", elsewhere, {"environment": "test"})
        await refused(cluster, "team-b", elsewhere, "allows it no environment")
        await cluster.apply_tenant("agents", allowed, {"environment": "test"})
        await eventually(lambda: condition(cluster.tenant("agents", allowed), "Provisioned").get("status") == "True")
