"""A MemoryTenant's status from what the operator found: conditions, phase, message (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Reasons of a Provisioned=False that retrying cannot fix: the spec or the configuration must change.
PERMANENT_REASONS = frozenset({"Refused", "InvalidSpec"})


@dataclass(frozen=True)
class Check:
    """One condition's verdict: True/False/None (Unknown), a CamelCase reason and a sentence for people."""

    ok: bool | None
    reason: str
    message: str


def deployment_readiness(deployment: dict[str, Any] | None) -> tuple[Check, Check]:
    """(Ready, Degraded) as the Deployment's controller reports it."""
    if deployment is None:
        return Check(False, "DeploymentMissing", "the Deployment does not exist"), Check(
            True, "DeploymentMissing", "the Deployment does not exist"
        )
    desired = deployment.get("spec", {}).get("replicas", 1)
    status = deployment.get("status") or {}
    available = status.get("availableReplicas") or 0
    counted = f"{available}/{desired} replicas available"
    healthy = Check(False, "AsExpected", counted)
    if desired == 0:
        return Check(False, "ScaledToZero", "spec.replicas is 0"), healthy
    if status.get("observedGeneration", 0) < deployment.get("metadata", {}).get("generation", 0) or available == 0:
        return Check(False, "Progressing", f"waiting for replicas: {counted}"), healthy
    if available < desired:
        return Check(True, "PartiallyAvailable", counted), Check(True, "ReplicasUnavailable", counted)
    return Check(True, "Available", counted), healthy


def merge_conditions(
    previous: list[dict[str, Any]], updates: dict[str, Check], generation: int, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Conditions with ``updates`` applied; a condition keeps its transition time while its status holds."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    merged = {c["type"]: c for c in previous}
    for kind, check in updates.items():
        status = {True: "True", False: "False", None: "Unknown"}[check.ok]
        before = merged.get(kind)
        merged[kind] = {
            "type": kind,
            "status": status,
            "reason": check.reason,
            "message": check.message,
            "lastTransitionTime": before["lastTransitionTime"] if before and before.get("status") == status else stamp,
            "observedGeneration": generation,
        }
    order = ["Provisioned", "Ready", "Degraded", "Paused", "Reconciling", "Stalled"]
    return sorted(merged.values(), key=lambda c: order.index(c["type"]) if c["type"] in order else len(order))


def phase_of(conditions: list[dict[str, Any]]) -> tuple[str, str]:
    """(phase, message) from the conditions: the first thing wrong, or that all is well."""
    by_type = {c["type"]: c for c in conditions}
    provisioned, ready, degraded = (by_type.get(k) for k in ("Provisioned", "Ready", "Degraded"))
    if provisioned is None:
        return "Pending", "waiting to be placed"
    if provisioned["status"] == "Unknown":
        return "Degraded", provisioned["message"]
    if provisioned["status"] != "True":
        failed = provisioned.get("reason") in PERMANENT_REASONS
        return ("Failed" if failed else "Provisioning"), provisioned["message"]
    if degraded is not None and degraded["status"] == "True":
        return "Degraded", degraded["message"]
    if ready is None or ready["status"] != "True":
        if ready is not None and ready.get("reason") == "ScaledToZero":
            return "Suspended", ready["message"]
        return "Provisioning", ready["message"] if ready else "waiting for the Deployment"
    return "Ready", ready["message"]


# Phases in which the operator is still bringing the tenant to its spec.
_IN_PROGRESS = frozenset({"Pending", "Provisioning", "Deleting"})


def kstatus_checks(
    phase: str, message: str, observed: int, generation: int, pending: str | None = None
) -> dict[str, Check]:
    """The conditions GitOps tools read (kstatus, as Flux and Argo CD do): ``Reconciling`` while the
    operator works towards the spec (``pending``: a change it holds back, such as a paced rollout),
    ``Stalled`` when it cannot get there without a change of spec or configuration. Both False, with
    observedGeneration current, means the tenant is as asked."""
    behind = observed < generation
    if pending is not None and phase not in _IN_PROGRESS and not behind:
        reconciling = Check(True, "RolloutPending", pending)
    else:
        busy = phase in _IN_PROGRESS or behind
        why = f"generation {generation} not yet handled" if behind and phase not in _IN_PROGRESS else message
        reconciling = Check(busy, phase if busy else "Reconciled", why if busy else message)
    return {
        "Reconciling": reconciling,
        "Stalled": Check(phase == "Failed", "Failed" if phase == "Failed" else "NotStalled", message),
    }
