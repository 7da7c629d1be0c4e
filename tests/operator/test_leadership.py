"""Leader election over a Lease, against the emulator: one holder at a time; a crashed holder's lease
is taken over once it expires, a released one at once; a holder whose lease was taken stops."""

import asyncio
import contextlib

import pytest
from pydantic import ValidationError

from engram_operator.config import LeaderElection
from engram_operator.kube import Kube, load_configuration
from engram_operator.leadership import Leadership, LeadershipLost
from tests.operator.harness import eventually

ELECTION = LeaderElection(leaseDurationSeconds=3, renewDeadlineSeconds=2, retryPeriodSeconds=0.3)
LEASE = "coordination.k8s.io/v1/leases"


@pytest.fixture
async def kube(emulator):
    client = Kube(load_configuration())
    yield client
    await client.close()


def candidate(kube: Kube, me: str) -> Leadership:
    return Leadership(kube, ELECTION, "engram-system", me=me)


def holder(emulator) -> str | None:
    lease = emulator.live(LEASE, "engram-system", ELECTION.name)
    return (lease or {}).get("spec", {}).get("holderIdentity")


@contextlib.asynccontextmanager
async def task(coro):
    running = asyncio.ensure_future(coro)
    try:
        yield running
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError, LeadershipLost):
            await running


async def test_one_holder_at_a_time_and_a_crashed_holders_lease_is_taken_once_it_expires(emulator, kube):
    a, b = candidate(kube, "a"), candidate(kube, "b")
    await a.acquire()
    assert holder(emulator) == "a"
    async with task(a.hold()) as renewing, task(b.acquire()) as waiting:
        # Several lease durations: a renews, b keeps waiting.
        await asyncio.sleep(3 * ELECTION.lease_duration_seconds)
        assert not waiting.done() and holder(emulator) == "a"
        renewing.cancel()  # a crashes: it neither renews nor releases
        await asyncio.wait_for(waiting, timeout=4 * ELECTION.lease_duration_seconds)
    assert holder(emulator) == "b"
    lease = emulator.live(LEASE, "engram-system", ELECTION.name)
    assert lease["spec"]["leaseTransitions"] == 1


async def test_a_released_lease_is_taken_at_once(emulator, kube):
    a, b = candidate(kube, "a"), candidate(kube, "b")
    await a.acquire()
    async with task(b.acquire()) as waiting:
        await asyncio.sleep(ELECTION.retry_period_seconds * 3)
        await a.release()
        # Well within the lease's duration: b does not wait for it to expire.
        await asyncio.wait_for(waiting, timeout=ELECTION.lease_duration_seconds / 2)
    assert holder(emulator) == "b"


async def test_a_holder_whose_lease_another_took_stops(emulator, kube):
    a = candidate(kube, "a")
    await a.acquire()
    lease = emulator.live(LEASE, "engram-system", ELECTION.name)
    async with task(a.hold()) as renewing:
        await candidate(kube, "intruder").kube.patch(
            "coordination.k8s.io/v1",
            "Lease",
            "engram-system",
            ELECTION.name,
            {"spec": {**lease["spec"], "holderIdentity": "intruder", "leaseDurationSeconds": 60}},
        )
        with pytest.raises(LeadershipLost, match="held by another"):
            await asyncio.wait_for(renewing, timeout=ELECTION.renew_deadline_seconds * 3)


async def test_two_candidates_at_once_one_wins(emulator, kube):
    candidates = [candidate(kube, f"c{i}") for i in range(5)]
    results = await asyncio.gather(*(c._try() for c in candidates))
    assert sum(results) == 1
    await eventually(lambda: holder(emulator) in {f"c{i}" for i, won in enumerate(results) if won})


def test_a_holder_must_stop_before_others_may_take_over():
    with pytest.raises(ValidationError, match="renewDeadlineSeconds < leaseDurationSeconds"):
        LeaderElection(leaseDurationSeconds=10, renewDeadlineSeconds=10)
    with pytest.raises(ValidationError, match="retryPeriodSeconds < renewDeadlineSeconds"):
        LeaderElection(renewDeadlineSeconds=2, retryPeriodSeconds=2)


async def test_a_holder_whose_api_server_stops_answering_stops_within_the_renew_deadline(emulator, kube):
    a = candidate(kube, "a")
    await a.acquire()
    hanging, release = asyncio.Event(), asyncio.Event()

    async def no_answer() -> None:
        await release.wait()

    hanging.set()
    emulator["get /apis/coordination.k8s.io/v1/namespaces/engram-system/leases/*", hanging] << no_answer
    try:
        started = asyncio.get_running_loop().time()
        with pytest.raises(LeadershipLost, match="could not be renewed"):
            await asyncio.wait_for(a.hold(), timeout=ELECTION.lease_duration_seconds * 3)
        # Stopped before another candidate may take over (the lease's duration after the last renewal).
        assert asyncio.get_running_loop().time() - started < ELECTION.lease_duration_seconds
    finally:
        hanging.clear()
        release.set()


async def test_a_candidate_rides_out_api_errors_while_it_waits(emulator, kube):
    failing = asyncio.Event()
    failing.set()
    emulator["get /apis/coordination.k8s.io/v1/namespaces/engram-system/leases/*", failing] << 503
    b = candidate(kube, "b")
    waiting = asyncio.ensure_future(b.acquire())
    try:
        await asyncio.sleep(ELECTION.retry_period_seconds * 4)
        assert not waiting.done()  # erring, not crashed
        failing.clear()
        await asyncio.wait_for(waiting, timeout=ELECTION.lease_duration_seconds)
    finally:
        waiting.cancel()
    assert holder(emulator) == "b"
