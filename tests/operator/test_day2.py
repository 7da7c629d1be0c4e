"""Living next to other controllers and people on a busy cluster: the operator repairs real drift
and nothing else (non-canonical quantities, fields other managers own, an autoscaler's replicas),
removes what the spec stops asking for, and changes nothing while a tenant is paused. Against the
emulator, whose server-side apply keeps field ownership as the API server does (ssa.py)."""

import asyncio

from tests.operator.harness import TENANTS, Cluster, eventually
from tests.operator.test_operator import condition, name, phase, ready_tenant

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
