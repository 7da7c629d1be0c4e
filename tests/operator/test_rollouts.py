"""When a tenant's rollout counts as done, and how slots are shared (pure)."""

from engram_operator.rollouts import Rollouts, rolled_out


def deployment(generation=2, observed=2, replicas=3, updated=3, available=3, pods=None, conditions=()) -> dict:
    status = {
        "observedGeneration": observed,
        "replicas": updated if pods is None else pods,
        "updatedReplicas": updated,
        "availableReplicas": available,
        "conditions": list(conditions),
    }
    return {"metadata": {"generation": generation}, "spec": {"replicas": replicas}, "status": status}


def test_a_rollout_is_done_when_the_new_generation_is_observed_and_every_replica_updated_and_available():
    assert rolled_out(deployment())
    assert not rolled_out(deployment(observed=1))  # the controller has not seen the new template
    assert not rolled_out(deployment(updated=2))  # an old pod still runs
    assert not rolled_out(deployment(available=2))  # a new pod is not available (a bad image)
    assert not rolled_out({"metadata": {"generation": 1}, "spec": {}})  # no status yet
    assert rolled_out(deployment(replicas=0, updated=0, available=0))
    # One replica, a broken image: the surge pod is "updated", the old one keeps one available.
    assert not rolled_out(deployment(replicas=1, updated=1, available=1, pods=2))
    assert not rolled_out(deployment(replicas=1, updated=1, available=0))
    deadline = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
    assert not rolled_out(deployment(conditions=[deadline]))


def test_slots_are_taken_by_started_rollouts_and_freed_by_finished_ones():
    rollouts = Rollouts(limit=2)
    assert rollouts.waiting_message("agents", "a") is None
    rollouts.started("agents", "a")
    rollouts.started("agents", "b")
    assert rollouts.waiting_message("agents", "a") is None  # its own rollout is no reason to wait
    waiting = rollouts.waiting_message("agents", "c")
    assert waiting is not None and "2 of 2" in waiting and "agents/a, agents/b" in waiting
    rollouts.observe("agents", "a", deployment(observed=1))  # still rolling
    assert rollouts.waiting_message("agents", "c") is not None
    rollouts.observe("agents", "a", deployment())
    assert rollouts.waiting_message("agents", "c") is None
    rollouts.observe("agents", "b", None)  # deleted
    assert rollouts.others("agents", "c") == []
