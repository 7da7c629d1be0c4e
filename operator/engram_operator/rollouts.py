"""Paced rollouts: a new operator image (or anything else that changes the tenants' pod template)
rolls at most ``maxConcurrentRollouts`` tenants at a time, not every tenant of the cluster at once.

A tenant whose pod template must change waits for a slot; its Deployment is left as it is (its
pods go on serving) and its status says why (Reconciling, RolloutPending) until it gets one. A slot
is taken when the operator applies the new template and given back when the Deployment's
controller reports the rollout done (the new generation observed, every replica updated and
available). A rollout that never finishes (a broken image) keeps its slot, so a bad upgrade stops
after ``maxConcurrentRollouts`` tenants instead of reaching them all. A new tenant's first
Deployment is no rollout and never waits.
"""

from __future__ import annotations

import asyncio
from typing import Any


def rolled_out(deployment: dict[str, Any]) -> bool:
    """Whether the Deployment's controller has finished rolling out its current generation, as
    `kubectl rollout status` judges it: every replica updated, no old pod left (with one replica
    a surge pod of a broken image is "updated" while the old pod keeps the count available), the
    updated ones available, and the progress deadline not exceeded."""
    desired = (deployment.get("spec") or {}).get("replicas", 1)
    status = deployment.get("status") or {}
    observed = status.get("observedGeneration", 0) >= (deployment.get("metadata") or {}).get("generation", 0)
    updated = status.get("updatedReplicas") or 0
    no_old_pods = (status.get("replicas") or 0) <= updated
    available = (status.get("availableReplicas") or 0) >= updated
    stuck = any(
        c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded"
        for c in status.get("conditions") or []
    )
    return observed and updated >= desired and no_old_pods and available and not stuck


class Rollouts:
    """The tenants whose new pod template the operator applied and whose rollout is not done."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lock = asyncio.Lock()  # held from the count to the apply, so that two cannot both take the last slot
        self._rolling: set[tuple[str, str]] = set()

    def others(self, namespace: str, tenant: str) -> list[str]:
        """The tenants rolling out now, but this one."""
        return sorted(f"{ns}/{name}" for ns, name in self._rolling if (ns, name) != (namespace, tenant))

    def waiting_message(self, namespace: str, tenant: str) -> str | None:
        """Why the tenant's new pod template must wait, or None when it may roll now."""
        busy = self.others(namespace, tenant)
        if len(busy) < self.limit:
            return None
        shown = ", ".join(busy[:5]) + (" ..." if len(busy) > 5 else "")
        return f"the new pod template waits for a rollout slot: {len(busy)} of {self.limit} in use ({shown})"

    def started(self, namespace: str, tenant: str) -> None:
        self._rolling.add((namespace, tenant))

    def observe(self, namespace: str, tenant: str, deployment: dict[str, Any] | None) -> None:
        """The Deployment as its controller reports it (None: deleted): a finished rollout frees its slot."""
        if deployment is None or rolled_out(deployment):
            self._rolling.discard((namespace, tenant))
