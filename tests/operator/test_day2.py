"""Living next to other controllers and people on a busy cluster: the operator repairs real drift
and nothing else (non-canonical quantities, fields other managers own, an autoscaler's replicas),
removes what the spec stops asking for, and changes nothing while a tenant is paused; API keys
rotate with an overlap, and a Secret from before the split into database and client Secrets is
split without new credentials. Against the emulator, whose server-side apply keeps field ownership
as the API server does (ssa.py)."""

import asyncio
import base64

import asyncpg

from engram.domain.tenancy import hash_key, schema_name
from engram.errors import Unauthorized
from engram.runtime import engram_session
from engram.settings import Settings
from engram_operator.config import OperatorConfig
from engram_operator.handlers import ROLLOUT_RETRY_SECONDS
from tests.operator.harness import TENANTS, Cluster, OperatorThread, eventually
from tests.operator.test_operator import condition, credentials, name, phase, ready_tenant

# The fixtures' drift interval is 1 s: this is several passes of the drift timer.
SEVERAL_DRIFT_PASSES = 3.5


def container(cluster: Cluster, tenant: str) -> dict:
    deployment = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")
    return deployment["spec"]["template"]["spec"]["containers"][0]


def repairs(cluster: Cluster, tenant: str) -> list[str]:
    return [e["message"] for e in cluster.events("agents", tenant) if e["reason"] == "DriftRepaired"]


async def test_what_the_server_and_other_managers_did_is_not_drift(operator, cluster):
    tenant = name()
    spec = {"environment": "test", "resources": {"requests": {"cpu": 1, "memory": "1024Mi"}, "limits": {"cpu": "2"}}}
    await ready_tenant(cluster, "agents", tenant, spec)
    assert container(cluster, tenant)["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}  # stored canonical
    # A mutating webhook's sidecar variable, applied by its own manager, beside the operator's.
    injected = {"name": "engram", "env": [{"name": "OTEL_SERVICE_NAME", "value": "engram"}]}
    await cluster.apply(
        "apps/v1/deployments",
        "agents",
        f"engram-{tenant}",
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [injected]}}}},
        manager="sidecar-injector",
    )
    await asyncio.sleep(SEVERAL_DRIFT_PASSES)
    assert repairs(cluster, tenant) == []
    assert {"name": "OTEL_SERVICE_NAME", "value": "engram"} in container(cluster, tenant)["env"]

    # The spec stops limiting the CPU: the limit goes from the Deployment, the injected variable stays.
    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"resources": {"limits": None}}})
    await eventually(lambda: "limits" not in container(cluster, tenant)["resources"], what="the limit removed")
    assert {"name": "OTEL_SERVICE_NAME", "value": "engram"} in container(cluster, tenant)["env"]
    assert repairs(cluster, tenant) == []

    # A change to a field the operator sets is drift, repaired and reported.
    await cluster.patch(
        "apps/v1/deployments", "agents", f"engram-{tenant}", {"spec": {"template": {"spec": {"hostNetwork": True}}}}
    )
    env = [dict(e) for e in container(cluster, tenant)["env"]]
    next(e for e in env if e["name"] == "ENGRAM_TENANT")["value"] = "someone-else"
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "engram", "env": env}]}}}}
    await cluster.apply("apps/v1/deployments", "agents", f"engram-{tenant}", patch, manager="kubectl")

    def repaired() -> bool:
        values = {e["name"]: e.get("value") for e in container(cluster, tenant)["env"]}
        return values["ENGRAM_TENANT"] == tenant and any("Deployment/" in m for m in repairs(cluster, tenant))

    await eventually(repaired, what="ENGRAM_TENANT repaired")


async def test_an_autoscaled_tenant_keeps_the_replicas_its_autoscaler_chose(operator, cluster):
    tenant = name()
    spec = {"environment": "test", "autoscaling": {"minReplicas": 2, "maxReplicas": 5}}
    await ready_tenant(cluster, "agents", tenant, spec)
    hpa = cluster.get("autoscaling/v2/horizontalpodautoscalers", "agents", f"engram-{tenant}")
    assert hpa["spec"]["minReplicas"] == 2 and hpa["spec"]["maxReplicas"] == 5
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"engram-{tenant}"}
    budget = cluster.get("policy/v1/poddisruptionbudgets", "agents", f"engram-{tenant}")
    assert budget["spec"]["maxUnavailable"] == 1

    # The autoscaler (or `kubectl scale`) sets the replicas; the operator leaves them.
    scaled = {"spec": {"replicas": 4}}
    await cluster.apply(
        "apps/v1/deployments", "agents", f"engram-{tenant}", scaled, manager="horizontal-pod-autoscaler"
    )
    await asyncio.sleep(SEVERAL_DRIFT_PASSES)
    assert cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")["spec"]["replicas"] == 4
    assert repairs(cluster, tenant) == []

    # Back to a fixed count: the autoscaler and the budget go, the operator owns the replicas again.
    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"autoscaling": None, "replicas": 1}})
    await eventually(
        lambda: (
            cluster.get("autoscaling/v2/horizontalpodautoscalers", "agents", f"engram-{tenant}") is None
            and cluster.get("policy/v1/poddisruptionbudgets", "agents", f"engram-{tenant}") is None
            and cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")["spec"]["replicas"] == 1
        ),
        what="a fixed replica count",
    )


async def test_a_paused_tenant_is_left_alone_until_it_is_resumed(operator, cluster):
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    paused = {"metadata": {"annotations": {"memory.engram.dev/paused": "true"}}}
    await cluster.patch(TENANTS, "agents", tenant, paused)
    await eventually(lambda: condition(cluster.tenant("agents", tenant), "Paused").get("status") == "True")
    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"replicas": 3}})
    await cluster.delete("v1/services", "agents", f"engram-{tenant}")
    await asyncio.sleep(SEVERAL_DRIFT_PASSES)
    assert cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")["spec"]["replicas"] == 1
    assert cluster.get("v1/services", "agents", f"engram-{tenant}") is None
    assert "Paused" in cluster.reasons("agents", tenant)

    await cluster.patch(TENANTS, "agents", tenant, {"metadata": {"annotations": {"memory.engram.dev/paused": None}}})

    def resumed() -> bool:
        deployment = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")
        return deployment["spec"]["replicas"] == 3 and cluster.get("v1/services", "agents", f"engram-{tenant}")

    await eventually(resumed, what="the spec applied once resumed")
    await eventually(lambda: condition(cluster.tenant("agents", tenant), "Paused")["status"] == "False")
    await cluster.play_deployment_controller("agents", f"engram-{tenant}")
    await eventually(lambda: phase(cluster, "agents", tenant) == "Ready")


async def key_works(dsn: str, tenant: str, key: str) -> bool:
    """Whether the tenant's service (on the pods' DSN) takes ``key``."""
    async with engram_session(Settings(database_url=dsn, environment="test", tenant=tenant), dsn) as engram:
        try:
            await engram.tenants.authenticate(tenant, key)
        except Unauthorized:
            return False
        return True


async def seconds_left(dsn: str, tenant: str, key: str) -> float | None:
    """How long ``key`` stays valid (None: no end set)."""
    conn = await asyncpg.connect(dsn)
    try:
        schema = schema_name(tenant)
        return await conn.fetchval(
            f'SELECT EXTRACT(EPOCH FROM revoked_at - now()) FROM "{schema}".api_keys WHERE key_hash = $1',
            hash_key(key),
        )
    finally:
        await conn.close()


def digest(cluster: Cluster, tenant: str) -> str:
    deployment = cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")
    return deployment["spec"]["template"]["metadata"]["annotations"]["memory.engram.dev/credentials-digest"]


async def rotate(cluster: Cluster, tenant: str, value: str, before: str) -> str:
    """Annotate the tenant to rotate its key; the new key once the client Secret holds it."""
    await cluster.patch(
        TENANTS, "agents", tenant, {"metadata": {"annotations": {"memory.engram.dev/rotate-key": value}}}
    )
    await eventually(lambda: credentials(cluster, "agents", tenant)["api-key"] != before, what="a new key")
    return credentials(cluster, "agents", tenant)["api-key"]


async def test_a_rotated_key_leaves_the_old_one_valid_for_the_overlap_then_not(operator, cluster):
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test", "apiKey": {"rotationOverlapSeconds": 3600}})
    first = credentials(cluster, "agents", tenant)
    rolled = digest(cluster, tenant)

    second = await rotate(cluster, tenant, "2026-12-04", first["api-key"])
    assert await key_works(first["dsn"], tenant, second) and await key_works(first["dsn"], tenant, first["api-key"])
    assert 3500 < await seconds_left(first["dsn"], tenant, first["api-key"]) <= 3600
    assert await seconds_left(first["dsn"], tenant, second) is None
    client = cluster.get("v1/secrets", "agents", f"engram-{tenant}-client")
    assert client["metadata"]["annotations"]["memory.engram.dev/key-rotation"] == "2026-12-04"
    await eventually(lambda: "KeyRotated" in cluster.reasons("agents", tenant), what="a KeyRotated event")
    # The pods hold no key: they do not roll. The same annotation again is no new rotation.
    await asyncio.sleep(SEVERAL_DRIFT_PASSES)
    assert credentials(cluster, "agents", tenant)["api-key"] == second and digest(cluster, tenant) == rolled

    # A rotation with no overlap: every key before it stops at once, the first one's end included.
    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"apiKey": {"rotationOverlapSeconds": 0}}})
    third = await rotate(cluster, tenant, "incident-42", second)
    assert await key_works(first["dsn"], tenant, third)
    assert not await key_works(first["dsn"], tenant, second)
    assert not await key_works(first["dsn"], tenant, first["api-key"])


async def test_a_secret_from_before_the_split_is_split_keeping_the_password_and_key(operator, cluster):
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    before = credentials(cluster, "agents", tenant)
    # As an operator before the split left it: one Secret with both, and neither of the new ones
    # (made while the tenant is paused, so that no drift pass sees it half done).
    paused = {"metadata": {"annotations": {"memory.engram.dev/paused": "true"}}}
    await cluster.patch(TENANTS, "agents", tenant, paused)
    await eventually(lambda: condition(cluster.tenant("agents", tenant), "Paused").get("status") == "True")
    for secret in ("database", "client"):
        await cluster.delete("v1/secrets", "agents", f"engram-{tenant}-{secret}")
    await create_legacy_secret(cluster, tenant, before)
    await cluster.patch(TENANTS, "agents", tenant, {"metadata": {"annotations": {"memory.engram.dev/paused": None}}})
    await eventually(
        lambda: (
            cluster.get("v1/secrets", "agents", f"engram-{tenant}-credentials") is None
            and cluster.get("v1/secrets", "agents", f"engram-{tenant}-client") is not None
        ),
        what="the old Secret split",
    )
    after = credentials(cluster, "agents", tenant)
    assert (after["dsn"], after["api-key"]) == (before["dsn"], before["api-key"])
    assert await key_works(after["dsn"], tenant, after["api-key"])


async def test_an_ingress_gives_agents_outside_the_cluster_a_url_and_goes_when_disabled(operator, cluster):
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    inside = f"http://engram-{tenant}.agents.svc:8080/t/{tenant}/mcp"
    assert cluster.tenant("agents", tenant)["status"]["mcpUrl"] == inside

    # A controller's own annotations could run configuration with its rights: refused.
    snippet = {"nginx.ingress.kubernetes.io/configuration-snippet": "return 200;"}
    risky = {"enabled": True, "host": "memory.example.com", "annotations": snippet}
    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"ingress": risky}})
    await eventually(
        lambda: "not allowed" in condition(cluster.tenant("agents", tenant), "Provisioned").get("message", ""),
        what="the annotation refused",
    )
    assert cluster.get("networking.k8s.io/v1/ingresses", "agents", f"engram-{tenant}") is None

    issuer = {"cert-manager.io/cluster-issuer": "letsencrypt"}
    exposed = {"enabled": True, "host": "memory.example.com", "tlsSecretName": "memory-tls"}
    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"ingress": {**exposed, "annotations": None}}})
    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"ingress": {"annotations": issuer}}})
    outside = f"https://memory.example.com/t/{tenant}/mcp"
    await eventually(
        lambda: (
            cluster.get("networking.k8s.io/v1/ingresses", "agents", f"engram-{tenant}")
            and cluster.tenant("agents", tenant)["status"]["mcpUrl"] == outside
            and credentials(cluster, "agents", tenant)["mcp-url"] == outside
        ),
        what="the Ingress and the public URL",
    )
    env = {e["name"]: e.get("value") for e in container(cluster, tenant)["env"]}
    assert "memory.example.com" in env["ENGRAM_ALLOWED_HOSTS"]

    await cluster.patch(TENANTS, "agents", tenant, {"spec": {"ingress": {"enabled": False}}})
    await eventually(
        lambda: (
            cluster.get("networking.k8s.io/v1/ingresses", "agents", f"engram-{tenant}") is None
            and credentials(cluster, "agents", tenant)["mcp-url"] == inside
        ),
        what="the Ingress gone and the URL back",
    )


async def test_an_upgrade_rolls_a_few_tenants_at_a_time(emulator, cluster, test_instance):
    config = OperatorConfig(
        image="engram:1", instances=[test_instance], driftIntervalSeconds=1, maxConcurrentRollouts=1
    )
    tenants = [name() for _ in range(3)]
    async with OperatorThread(config):
        for tenant in tenants:
            await ready_tenant(cluster, "agents", tenant, {"environment": "test"})

    # Each still has the Secret of an older operator: its pods read it until their rollout.
    for tenant in tenants:
        await create_legacy_secret(cluster, tenant, credentials(cluster, "agents", tenant))

    def upgraded() -> list[str]:
        return [t for t in tenants if container(cluster, t)["image"] == "engram:2"]

    def legacy(tenant: str) -> dict | None:
        return cluster.get("v1/secrets", "agents", f"engram-{tenant}-credentials")

    async with OperatorThread(config.model_copy(update={"image": "engram:2"})):
        await eventually(lambda: len(upgraded()) == 1, what="one tenant rolling out")
        await asyncio.sleep(SEVERAL_DRIFT_PASSES)
        assert len(upgraded()) == 1  # the others wait for its rollout to finish
        for waiting in set(tenants) - set(upgraded()):
            await eventually(
                lambda t=waiting: (
                    condition(cluster.tenant("agents", t), "Reconciling").get("reason") == "RolloutPending"
                ),
                what="the wait in the status",
            )
            assert phase(cluster, "agents", waiting) == "Ready"  # its pods go on serving meanwhile
            assert legacy(waiting) is not None  # and may restart meanwhile
        await asyncio.sleep(ROLLOUT_RETRY_SECONDS * 1.6)  # the waiting tenants ask again, a few times
        # Each rollout the Deployment controller finishes lets the next tenant roll.
        finished: set[str] = set()
        while len(finished) < len(tenants):
            [rolling] = [t for t in upgraded() if t not in finished]
            await cluster.play_deployment_controller("agents", f"engram-{rolling}")
            finished.add(rolling)
            expected = min(len(finished) + 1, len(tenants))
            await eventually(lambda n=expected: len(upgraded()) == n, what=f"{expected} tenants upgraded")
        await eventually(
            lambda: all(
                condition(cluster.tenant("agents", t), "Reconciling").get("status") == "False" for t in tenants
            ),
            what="every tenant reconciled",
        )
        assert all(legacy(t) is None for t in tenants)
        # One RolloutPending event per wait, not one per retry.
        for tenant in tenants:
            pending = [e for e in cluster.events("agents", tenant) if e["reason"] == "RolloutPending"]
            assert len(pending) <= 1, pending


async def create_legacy_secret(cluster: Cluster, tenant: str, values: dict[str, str]) -> None:
    """The one Secret an operator before the split made, with the same credentials."""
    legacy = {k: values[k] for k in ("dsn", "api-key", "mcp-url")}
    await cluster._request(
        "POST",
        "/api/v1/namespaces/agents/secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"engram-{tenant}-credentials", "namespace": "agents"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in legacy.items()},
        },
    )


async def test_a_namesake_the_operator_did_not_make_is_never_deleted(operator, cluster):
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test"})
    # A budget someone made by hand, named as the operator would name its own.
    mine = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"engram-{tenant}", "namespace": "agents"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/instance": tenant}}},
    }
    await cluster._request("POST", "/apis/policy/v1/namespaces/agents/poddisruptionbudgets", mine)
    await asyncio.sleep(SEVERAL_DRIFT_PASSES)
    assert cluster.get("policy/v1/poddisruptionbudgets", "agents", f"engram-{tenant}") is not None


async def test_turning_autoscaling_on_keeps_the_running_replicas(operator, cluster):
    tenant = name()
    await ready_tenant(cluster, "agents", tenant, {"environment": "test", "replicas": 3})
    await cluster.patch(
        TENANTS, "agents", tenant, {"spec": {"replicas": None, "autoscaling": {"minReplicas": 2, "maxReplicas": 6}}}
    )
    await eventually(
        lambda: cluster.get("autoscaling/v2/horizontalpodautoscalers", "agents", f"engram-{tenant}"),
        what="the autoscaler",
    )
    await asyncio.sleep(SEVERAL_DRIFT_PASSES)
    # Not dropped to the default of 1 while the autoscaler takes over (server-side apply would).
    assert cluster.get("apps/v1/deployments", "agents", f"engram-{tenant}")["spec"]["replicas"] == 3
