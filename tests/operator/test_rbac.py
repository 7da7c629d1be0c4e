"""The chart's RBAC grants exactly what the operator uses: a whole tenant lifecycle runs against the
emulator, every call the operator makes is turned into (apiGroup, resource, verb), and the set must
equal the rules the chart renders. A missing grant fails here instead of in a cluster; an unused one
is a privilege to remove."""

import yaml
from kmock._internal import enums

from engram_operator.config import LeaderElection
from engram_operator.kube import Kube, load_configuration
from engram_operator.leadership import Leadership
from tests.operator.chart import render, rules
from tests.operator.harness import TENANTS, eventually
from tests.operator.test_operator import CHILDREN, name, phase, ready_tenant

VERBS = {
    enums.action.FETCH: "get",
    enums.action.LIST: "list",
    enums.action.WATCH: "watch",
    enums.action.CREATE: "create",
    enums.action.UPDATE: "patch",
    enums.action.DELETE: "delete",
}


def used_permissions(emulator) -> set[tuple[str, str, str]]:
    used = set()
    for request in emulator.requests():
        if request.url.path == "/api/v1/namespaces/kube-system":  # the cluster's id (kmock names no resource)
            used.add(("", "namespaces", "get"))
            continue
        if request.url.path == "/api/v1/namespaces/kube-system":  # the cluster's id (kmock names no resource)
            used.add(("", "namespaces", "get"))
            continue
        if (
            request.resource is None
            or request.resource.plural is None
            or request.headers.get("User-Agent", "").startswith("kmock/")
        ):
            continue  # discovery (allowed to every client), or the test's own kubectl-like calls
        verb = VERBS.get(request.action)
        assert verb is not None, f"an API call RBAC cannot name: {request.method} {request.url}"
        resource = request.resource.plural + (f"/{request.subresource}" if request.subresource else "")
        used.add((request.resource.group, resource, verb))
        if request.headers.get("Content-Type", "").startswith("application/apply-patch"):
            used.add((request.resource.group, resource, "create"))  # an apply may create: RBAC checks both
    return used


async def test_the_chart_grants_exactly_what_the_operator_uses(operator, emulator, cluster):
    kept, dropped = name(), name()
    await ready_tenant(cluster, "agents", kept, {"environment": "test", "networkPolicy": {"enabled": True}})
    await ready_tenant(cluster, "agents", dropped, {"environment": "test", "deletionPolicy": "Delete"})
    # Drift in every kind of child, then a deleted Deployment: each is patched or created again.
    tampered = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "someone-else"}}}
    for resource, child in CHILDREN:
        await cluster.patch(resource, "agents", child.format(kept), tampered)
    await cluster.patch("networking.k8s.io/v1/networkpolicies", "agents", f"engram-{kept}", tampered)
    await cluster.delete("apps/v1/deployments", "agents", f"engram-{kept}")
    await eventually(lambda: cluster.get("apps/v1/deployments", "agents", f"engram-{kept}"), what="drift repair")

    def repaired() -> bool:
        return all(
            cluster.get(resource, "agents", child.format(kept))["metadata"]["labels"]["app.kubernetes.io/managed-by"]
            == "engram-operator"
            for resource, child in CHILDREN
        )

    await eventually(repaired, what="every child repaired")
    scaled = {
        "autoscaling": {"minReplicas": 2, "maxReplicas": 3},
        "networkPolicy": None,
        "ingress": {"enabled": True, "host": "memory.example.com"},
    }
    await cluster.patch(TENANTS, "agents", kept, {"spec": scaled})
    await eventually(lambda: cluster.get("networking.k8s.io/v1/networkpolicies", "agents", f"engram-{kept}") is None)
    await eventually(lambda: cluster.get("policy/v1/poddisruptionbudgets", "agents", f"engram-{kept}"))
    await eventually(lambda: cluster.get("autoscaling/v2/horizontalpodautoscalers", "agents", f"engram-{kept}"))
    await eventually(lambda: cluster.get("networking.k8s.io/v1/ingresses", "agents", f"engram-{kept}"))
    for tenant in (kept, dropped):
        await cluster.delete(TENANTS, "agents", tenant)
        await eventually(lambda t=tenant: phase(cluster, "agents", t) is None, what=f"{tenant} deleted")

    # What the entrypoint does around kopf, as the chart configures it: wait for the Lease, renew
    # it, hand it back.
    objects = render()
    [configmap] = [o for o in objects if o["kind"] == "ConfigMap"]
    election = LeaderElection.model_validate(yaml.safe_load(configmap["data"]["config.yaml"])["leaderElection"])
    kube = Kube(load_configuration())
    try:
        leadership = Leadership(kube, election, election.lease_namespace())
        await leadership.acquire()
        await leadership.acquire()  # a renewal
        await leadership.release()
    finally:
        await kube.close()
    assert used_permissions(emulator) == rules(objects)
