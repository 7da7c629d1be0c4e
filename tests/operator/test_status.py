"""A MemoryTenant's conditions and phase from its Deployment's state (pure)."""

from engram_operator.status import deployment_readiness, kstatus_checks, merge_conditions, phase_of


def deployment(desired: int, available: int, generation: int = 1, observed: int = 1) -> dict:
    return {
        "metadata": {"generation": generation},
        "spec": {"replicas": desired},
        "status": {"availableReplicas": available, "observedGeneration": observed},
    }


def phase(found: dict | None) -> str:
    ready, degraded = deployment_readiness(found)
    provisioned = {"type": "Provisioned", "status": "True", "reason": "SchemaReady", "message": "ok"}
    conditions = merge_conditions([provisioned], {"Ready": ready, "Degraded": degraded}, 1)
    return phase_of(conditions)[0]


def test_each_state_of_the_deployment_has_its_phase():
    assert phase(deployment(2, 2)) == "Ready"
    assert phase(deployment(3, 1)) == "Degraded"  # serving, but with fewer replicas than asked
    assert phase(deployment(2, 0)) == "Provisioning"
    assert phase(deployment(2, 2, generation=2, observed=1)) == "Provisioning"  # a rollout under way
    assert phase(deployment(0, 0)) == "Suspended"
    assert phase(None) == "Degraded"


def test_partially_available_replicas_are_ready_and_degraded():
    ready, degraded = deployment_readiness(deployment(3, 2))
    assert (ready.ok, ready.reason) == (True, "PartiallyAvailable")
    assert (degraded.ok, degraded.reason, degraded.message) == (True, "ReplicasUnavailable", "2/3 replicas available")


def test_gitops_tools_read_reconciling_and_stalled_as_kstatus_defines_them():
    def verdict(phase: str, observed: int = 2, generation: int = 2) -> tuple[bool | None, bool | None]:
        checks = kstatus_checks(phase, "why", observed, generation)
        return checks["Reconciling"].ok, checks["Stalled"].ok

    assert verdict("Ready") == (False, False)  # current: as asked
    assert verdict("Suspended") == verdict("Degraded") == (False, False)
    assert verdict("Provisioning") == verdict("Pending") == verdict("Deleting") == (True, False)
    assert verdict("Failed") == (False, True)  # only a change of spec or configuration helps
    assert verdict("Ready", observed=1) == (True, False)  # a new spec not yet handled
    assert kstatus_checks("Ready", "ok", 1, 2)["Reconciling"].message == "generation 2 not yet handled"
