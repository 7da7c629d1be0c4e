"""What counts as drift (the operator's drift.py), checked against server-side apply as the API
server does it (the emulator's ssa.py): a child the operator applied, then stored and touched by
others the way a cluster does, has not drifted; a change to a field the operator sets has."""

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram_operator.drift import APPLIED, drifted, with_digest
from engram_operator.manifests import TenantView, render_deployment
from tests.operator import ssa


def deployment(spec: dict | None = None) -> dict:
    return render_deployment(TenantView("t1", "agents", "test", "engram:1", spec=spec or {}))


def stored(manifest: dict, owners: dict | None = None, live: dict | None = None) -> dict:
    """The object as the server keeps it after the operator applied ``manifest``."""
    owners = {} if owners is None else owners
    result = ssa.apply(live or {}, manifest, "engram-operator", owners)
    return ssa.default("deployments", ssa.normalise(result))


@pytest.mark.parametrize(
    ("given_value", "canonical"),
    [
        ("1024Mi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("1000m", "1"),
        ("0.5", "500m"),
        (1, "1"),
        ("2000", "2k"),
        ("100m", "100m"),
        ("512Mi", "512Mi"),
    ],
)
def test_quantities_are_stored_canonical(given_value, canonical):
    assert ssa.canonical_quantity(given_value) == canonical


def test_non_canonical_quantities_in_the_spec_are_not_drift():
    manifest = with_digest(deployment({"resources": {"requests": {"cpu": 1, "memory": "1024Mi"}}}))
    live = stored(manifest)
    resources = live["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "1", "memory": "1Gi"}  # as the server keeps them
    assert not drifted(manifest, live)
    resources["requests"]["memory"] = "2Gi"
    assert drifted(manifest, live)


def test_an_env_var_another_manager_added_is_not_drift_but_a_changed_one_is():
    manifest = with_digest(deployment())
    owners: dict = {}
    live = stored(manifest, owners)
    container = {"name": "engram", "env": [{"name": "X", "value": "1"}]}
    injected = {"spec": {"template": {"spec": {"containers": [container]}}}}
    live = ssa.apply(live, injected, "sidecar-injector", owners)
    env = live["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "X", "value": "1"} in env and len(env) > 1
    assert not drifted(manifest, live)

    changed = copy.deepcopy(live)
    next(e for e in changed["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "ENGRAM_TENANT")[
        "value"
    ] = "other"
    assert drifted(manifest, changed)
    # Re-applied, the operator's value is back and the injected variable stays (it is not the operator's).
    again = ssa.apply(changed, manifest, "engram-operator", owners)
    assert not drifted(manifest, again)
    assert {"name": "X", "value": "1"} in again["spec"]["template"]["spec"]["containers"][0]["env"]


def test_a_field_the_spec_stops_setting_is_removed_by_the_next_apply():
    owners: dict = {}
    limited = with_digest(deployment({"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}))
    live = stored(limited, owners)
    unlimited = with_digest(deployment({"resources": {"requests": {"cpu": "1"}}}))
    # Still a subset of what is there: only the digest tells the manifest changed.
    assert drifted(unlimited, live)
    assert not drifted({k: v for k, v in unlimited.items() if k != "metadata"}, live)
    live = stored(unlimited, owners, live)
    assert "limits" not in live["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert live["metadata"]["annotations"][APPLIED] == unlimited["metadata"]["annotations"][APPLIED]


def test_a_field_another_manager_also_owns_survives_the_operator_dropping_it():
    owners: dict = {}
    live = stored(with_digest(deployment({"replicas": 3})), owners)
    live = ssa.apply(live, {"spec": {"replicas": 3}}, "kube-controller-manager", owners)
    live = stored(with_digest(deployment({"autoscaling": {"minReplicas": 1, "maxReplicas": 4}})), owners, live)
    assert live["spec"]["replicas"] == 3


def test_replicas_dropped_by_their_only_owner_fall_back_to_the_default():
    owners: dict = {}
    live = stored(with_digest(deployment({"replicas": 3})), owners)
    live = stored(with_digest(deployment({"autoscaling": {"minReplicas": 1, "maxReplicas": 4}})), owners, live)
    assert live["spec"]["replicas"] == 1


def test_atomic_lists_must_be_equal():
    manifest = {"spec": {"args": ["serve"]}}
    assert not drifted(manifest, {"spec": {"args": ["serve"]}})
    assert drifted(manifest, {"spec": {"args": ["serve", "--debug"]}})


specs = st.fixed_dictionaries(
    {},
    optional={
        "replicas": st.integers(0, 5),
        "resources": st.fixed_dictionaries(
            {},
            optional={
                "requests": st.fixed_dictionaries(
                    {},
                    optional={
                        "cpu": st.sampled_from([1, "1", "1000m", "250m", "0.5"]),
                        "memory": st.sampled_from(["1024Mi", "1Gi", "512Mi", "1.5Gi"]),
                    },
                ),
                "limits": st.fixed_dictionaries({}, optional={"memory": st.sampled_from(["2048Mi", "2Gi", "3Gi"])}),
            },
        ),
        "retrieval": st.fixed_dictionaries({}, optional={"topK": st.integers(1, 50)}),
    },
)


@given(before=specs, after=specs)
def test_what_the_operator_applied_is_never_drift_whatever_came_before(before, after):
    """The drift check never fights the server: after any apply, the same manifest is not drift."""
    owners: dict = {}
    live = stored(with_digest(deployment(before)), owners)
    manifest = with_digest(deployment(after))
    live = stored(manifest, owners, live)
    assert not drifted(manifest, live)


def test_empty_values_the_server_does_not_store_are_not_drift():
    desired = {"spec": {"template": {"spec": {"nodeSelector": {}, "tolerations": [], "priorityClassName": ""}}}}
    assert not drifted(desired, {"spec": {"template": {"spec": {}}}})
    assert drifted({"spec": {"nodeSelector": {"disk": "ssd"}}}, {"spec": {}})
