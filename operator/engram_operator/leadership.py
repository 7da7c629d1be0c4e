"""One operator acts at a time: leader election over a coordination.k8s.io Lease, as Kubernetes'
own controllers do it.

A second copy (a stuck pod during a rollout, a standby replica, a developer's local run against
the cluster) waits until the holder stops renewing the Lease; the holder renews it every
``retry_period`` and stops acting (its process exits, to start again as a candidate) when it could
not renew for ``renew_deadline``, which is shorter than the lease's duration, so it has stopped
before anyone else may take over. A holder that stops cleanly hands the Lease back at once.

Expiry is judged by this process's own clock, from when it last saw the record change, never by
comparing another machine's timestamps with its own: clocks may disagree.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import random
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp

from engram_operator.config import LeaderElection
from engram_operator.kube import Kube, KubeError

logger = logging.getLogger("engram_operator.leadership")

LEASE = ("coordination.k8s.io/v1", "Lease")
# What a call to the API server may fail with and be tried again: an error status, a connection
# that broke, no answer in time.
TRANSIENT = (KubeError, aiohttp.ClientError, OSError, TimeoutError)


class LeadershipLost(Exception):
    """The Lease could not be renewed in time, or another holds it: this operator must stop."""


def identity() -> str:
    """This process among the candidates: its host (the pod's name) and a random suffix."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # a MicroTime


@dataclass
class _Seen:
    """The Lease's record as last seen, and when (by this process's monotonic clock)."""

    record: tuple[Any, ...] = ()
    at: float = 0.0


class Leadership:
    def __init__(self, kube: Kube, election: LeaderElection, namespace: str, me: str | None = None) -> None:
        self.kube = kube
        self.election = election
        self.namespace = namespace
        self.me = me or identity()
        self._seen = _Seen()

    async def acquire(self) -> None:
        """Wait until this process holds the Lease. An API server that errs or does not answer is
        tried again: a candidate that crashed on it would be in back-off when it is needed."""
        announced = False
        while True:
            try:
                async with asyncio.timeout(self.election.renew_deadline_seconds):
                    if await self._try():
                        break
            except TRANSIENT as e:
                logger.warning(
                    "the lease %s/%s could not be read or taken (will retry): %s", self.namespace, self.election.name, e
                )
            else:
                if not announced:
                    logger.info(
                        "waiting for the lease %s/%s, held by another operator", self.namespace, self.election.name
                    )
                    announced = True
            await asyncio.sleep(self.election.retry_period_seconds * random.uniform(1.0, 1.2))
        logger.info("holding the lease %s/%s as %s", self.namespace, self.election.name, self.me)

    async def hold(self) -> None:
        """Renew the Lease until cancelled; raises LeadershipLost when it cannot. Each renewal may
        take only what is left until the renew deadline, so a call that hangs cannot keep this
        operator acting after another may have taken over."""
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.election.retry_period_seconds)
            left = self.election.renew_deadline_seconds - (time.monotonic() - renewed)
            try:
                async with asyncio.timeout(max(left, 0.0)):
                    if await self._try():
                        renewed = time.monotonic()
                        continue
                raise LeadershipLost(f"the lease {self.election.name} is held by another operator now")
            except TRANSIENT as e:
                if time.monotonic() - renewed >= self.election.renew_deadline_seconds:
                    raise LeadershipLost(
                        f"the lease could not be renewed for {self.election.renew_deadline_seconds}s: {e!r}"
                    ) from e
                logger.warning("renewing the lease failed (will retry): %r", e)

    async def release(self) -> None:
        """Hand the Lease back (a clean stop): the next candidate takes over at once."""
        try:
            lease = await self.kube.get(*LEASE, self.namespace, self.election.name)
            if lease is None or lease["spec"].get("holderIdentity") != self.me:
                return
            spec = {"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": _now()}
            await self.kube.patch(*LEASE, self.namespace, self.election.name, self._guarded(lease, spec))
        except TRANSIENT as e:  # it expires by itself
            logger.warning("could not release the lease: %s", e)

    async def _try(self) -> bool:
        """Take or renew the Lease if it is free, expired or ours; False if another holds it."""
        lease = await self.kube.get(*LEASE, self.namespace, self.election.name)
        now, duration = _now(), self.election.lease_duration_seconds
        if lease is None:
            manifest = {
                "apiVersion": LEASE[0],
                "kind": LEASE[1],
                "metadata": {"name": self.election.name, "namespace": self.namespace},
                "spec": self._spec(now, now, transitions=0),
            }
            return await self._conflict_free(self.kube.create(manifest))
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        if record != self._seen.record:
            self._seen = _Seen(record, time.monotonic())
        ours = holder == self.me
        held_for = spec.get("leaseDurationSeconds") or duration
        if holder and not ours and time.monotonic() < self._seen.at + held_for:
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if ours else 1)
        acquired = spec.get("acquireTime") if ours else now
        patch = self._guarded(lease, self._spec(acquired or now, now, transitions))
        return await self._conflict_free(self.kube.patch(*LEASE, self.namespace, self.election.name, patch))

    def _spec(self, acquired: str, renewed: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.me,
            "leaseDurationSeconds": int(self.election.lease_duration_seconds),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        }

    @staticmethod
    def _guarded(lease: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        """A patch that applies only to the version read: a candidate that wrote first wins."""
        return {"metadata": {"resourceVersion": lease["metadata"]["resourceVersion"]}, "spec": spec}

    @staticmethod
    async def _conflict_free(call: Any) -> bool:
        try:
            await call
        except KubeError as e:
            if e.status == 409:  # another candidate wrote first
                return False
            raise
        return True
