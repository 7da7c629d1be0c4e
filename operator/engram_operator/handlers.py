"""Kopf handlers, kept thin: each turns an event into a Reconciler call, then status and events."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Coroutine
from typing import Any

import kopf
from kubernetes.client import Configuration

from engram_operator import metrics
from engram_operator.config import OperatorConfig
from engram_operator.kube import GROUP, PLURAL, VERSION, Kube, connection_info, load_configuration
from engram_operator.placement import PlacementError
from engram_operator.reconcile import PAUSED, InvalidSpec, Reconciler, Tenant
from engram_operator.status import Check, deployment_readiness

FINALIZER = "memory.engram.dev/finalizer"
MANAGED = {"app.kubernetes.io/managed-by": "engram-operator"}
DRIFT_TIMER = "drift-check"


def backoff(retry: int, draw: Callable[[], float] = random.random) -> float:
    """Seconds before the next attempt after a transient failure: between half and all of 5, 10,
    20 ... at most 5 minutes. The spread keeps tenants that failed together (an operator restart,
    a database back from an outage) from all retrying in the same second again."""
    bound = min(300.0, 5.0 * 2**retry)
    return bound * (0.5 + 0.5 * draw())


class Operator:
    """What the handlers share: the configuration and, once logged in, the API client."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self._reconciler: Reconciler | None = None

    def connect(self, configuration: Configuration) -> None:
        if self._reconciler is None:
            self._reconciler = Reconciler(self.config, Kube(configuration))
        else:  # a login again: same reconciler (and tenant locks), new credentials
            self._reconciler.kube.reconfigure(configuration)

    async def close(self) -> None:
        if self._reconciler is not None:
            await self._reconciler.kube.close()

    @property
    def reconciler(self) -> Reconciler:
        if self._reconciler is None:
            raise kopf.TemporaryError("not logged in to the Kubernetes API yet", delay=1)
        return self._reconciler


# How long a tenant whose rollout waits for a slot waits before it asks again (jittered).
ROLLOUT_RETRY_SECONDS = 10.0


async def reconcile_tenant(reconciler: Reconciler, tenant: Tenant, retry: int, *, drift: bool) -> None:
    """One reconciliation, its status and its events. Raises kopf's errors so kopf retries or stops."""
    ns, name, body = tenant.namespace, tenant.name, tenant.body
    if tenant.paused:
        await _pause(reconciler, tenant, announce=not drift)
        return
    async with reconciler.lock(ns, name):
        try:
            with metrics.timed(ns, name, "drift" if drift else "change"):
                outcome = await reconciler.reconcile(tenant)
        except (PlacementError, InvalidSpec) as e:
            metrics.failed(ns, name, "refused")
            reason = "InvalidSpec" if isinstance(e, InvalidSpec) else "Refused"
            refused = {"Provisioned": Check(False, reason, str(e))}
            published = await reconciler.publish(ns, name, refused, tenant.generation)
            if not drift or (published and published[1] != "Failed"):
                kopf.warn(body, reason=reason, message=str(e))
            raise kopf.PermanentError(str(e)) from e
        except Exception as e:  # the database or the API server: try again later
            metrics.failed(ns, name, "retrying")
            delay = backoff(retry)
            message = f"{type(e).__name__}: {e}; retrying in {delay:.0f}s"
            # A tenant provisioned before still serves; only the operator cannot check it now.
            check = Check(None if tenant.status.get("instance") else False, "Retrying", message)
            with contextlib.suppress(Exception):
                await reconciler.publish(ns, name, {"Provisioned": check})
            kopf.warn(body, reason="Retrying", message=message)
            raise kopf.TemporaryError(message, delay=delay) from e
        checks = {"Provisioned": outcome.provisioned_check, "Ready": outcome.ready, "Degraded": outcome.degraded}
        if tenant.was_paused:
            checks["Paused"] = Check(False, "Resumed", f"the {PAUSED} annotation is gone: reconciling again")
        published = await reconciler.publish(
            ns,
            name,
            checks,
            tenant.generation,
            pending=outcome.rollout_pending,
            instance=outcome.provisioned.instance,
            schema=outcome.provisioned.schema,
            mcpUrl=outcome.mcp_url,
        )
    if not tenant.status.get("schema"):
        kopf.info(body, reason="Provisioned", message=outcome.provisioned_check.message)
    if outcome.model_pending and not drift:
        kopf.warn(body, reason="EmbeddingModelChangePending", message=outcome.model_pending)
    for child, applied in outcome.changed.items():
        if drift:
            kopf.warn(body, reason="DriftRepaired", message=f"{child} had drifted from the spec: {applied} again")
        else:
            kopf.info(body, reason="Removed" if applied == "deleted" else applied.capitalize(), message=child)
    if outcome.key_rotated:
        kopf.info(body, reason="KeyRotated", message=outcome.key_rotated)
    _announce_ready(body, published, outcome.ready)
    if outcome.rollout_pending:  # tried again soon (drift passes try too): a slot frees in a minute or so
        if not drift and not _was_waiting(published):  # one event per wait, not one per retry
            kopf.info(body, reason="RolloutPending", message=outcome.rollout_pending)
        raise kopf.TemporaryError(outcome.rollout_pending, delay=ROLLOUT_RETRY_SECONDS * (0.5 + random.random()))


async def until_stopped(work: Coroutine[Any, Any, None], stopped: kopf.DaemonStopped) -> None:
    """Run a timer's ``work``, cancelled as soon as kopf stops the timer (the operator stopping, the
    tenant deleted). Kopf cancels the other handlers when it stops, but a timer it only flags: one
    in the middle of a check would hold the stopping operator, then be abandoned."""
    task = asyncio.ensure_future(work)
    flag = asyncio.ensure_future(_flagged(stopped))
    try:
        await asyncio.wait({task, flag}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        flag.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})  # the reconciliation gives up promptly (bounded waits only)
    if not task.cancelled():
        task.result()


async def _flagged(stopped: kopf.DaemonStopped) -> None:
    await stopped.wait()


async def _pause(reconciler: Reconciler, tenant: Tenant, *, announce: bool) -> None:
    message = f"the {PAUSED} annotation is set: the operator changes nothing until it is removed"
    async with reconciler.lock(tenant.namespace, tenant.name):
        published = await reconciler.publish(tenant.namespace, tenant.name, {"Paused": Check(True, "Paused", message)})
    if announce and published is not None:
        kopf.info(tenant.body, reason="Paused", message=message)


def _was_waiting(published: tuple[dict[str, Any], str] | None) -> bool:
    """Whether the status said RolloutPending already before this pass."""
    conditions = ((published[0] if published else {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Reconciling" and c.get("reason") == "RolloutPending" for c in conditions)


def _announce_ready(body: dict[str, Any], published: tuple[dict[str, Any], str] | None, ready: Check) -> None:
    if published is not None and ready.ok and published[1] != "Ready":
        kopf.info(body, reason="Ready", message=ready.message)


def register(registry: kopf.OperatorRegistry, operator: Operator) -> None:
    """Declare every handler in ``registry`` (kopf.run takes it), closing over ``operator``."""
    tenants = (GROUP, VERSION, PLURAL)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.finalizer = FINALIZER
        # Kopf's bookkeeping in annotations: status belongs to the MemoryTenant API alone.
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="memory.engram.dev")
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix="memory.engram.dev", key="last-handled-configuration"
        )
        settings.posting.reporting_component = "engram-operator"
        # No watching of CRDs and namespaces: the resources are known, and RBAC need not grant it.
        settings.scanning.disabled = True

    @kopf.on.cleanup(registry=registry)
    async def disconnect(**_: Any) -> None:
        # Kopf stops the timers it knows of as it begins to stop; one it spawns meanwhile (a tenant
        # first seen in the last moments) sleeps on and would hold the exit for 5 s more, until
        # kopf cancels what is left. Now that no new one can come, such a timer is cancelled.
        for task in asyncio.all_tasks():
            if task.get_name() == f"runner of {DRIFT_TIMER}":  # how kopf names a timer's task
                task.cancel()
        await operator.close()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        configuration = load_configuration()
        operator.connect(configuration)
        return connection_info(configuration)

    @kopf.on.resume(*tenants, registry=registry)
    @kopf.on.create(*tenants, registry=registry)
    @kopf.on.update(*tenants, registry=registry)
    async def reconcile(body: kopf.Body, retry: int, **_: Any) -> None:
        await reconcile_tenant(operator.reconciler, Tenant(dict(body)), retry, drift=False)

    @kopf.timer(
        *tenants,
        id=DRIFT_TIMER,
        interval=operator.config.drift_interval_seconds,
        initial_delay=operator.config.drift_interval_seconds,
        registry=registry,
    )
    async def check_drift(body: kopf.Body, stopped: kopf.DaemonStopped, **_: Any) -> None:
        tenant = Tenant(dict(body))
        # A spec changed while paused was seen, not applied: resuming applies it.
        resuming = tenant.was_paused and not tenant.paused
        if tenant.status.get("observedGeneration") != tenant.generation and not resuming:
            return  # the create/update handler has this spec in hand
        # Status and events tell the outcome; the next tick is the retry.
        with contextlib.suppress(kopf.PermanentError, kopf.TemporaryError):
            await until_stopped(reconcile_tenant(operator.reconciler, tenant, 0, drift=not resuming), stopped)

    @kopf.on.event("apps", "v1", "deployments", labels=MANAGED, registry=registry)
    async def deployment_changed(body: kopf.Body, type: str | None, **_: Any) -> None:
        meta = body["metadata"]
        name = (meta.get("labels") or {}).get("memory.engram.dev/tenant")
        if not name:
            return
        live = None if type == "DELETED" else dict(body)
        ready, degraded = deployment_readiness(live)
        reconciler = operator.reconciler
        reconciler.rollouts.observe(meta["namespace"], name, live)
        async with reconciler.lock(meta["namespace"], name):
            published = await reconciler.publish(meta["namespace"], name, {"Ready": ready, "Degraded": degraded})
        if published is not None:
            _announce_ready(published[0], published, ready)

    @kopf.on.delete(*tenants, registry=registry)
    async def delete(body: kopf.Body, retry: int, **_: Any) -> None:
        tenant, reconciler = Tenant(dict(body)), operator.reconciler
        async with reconciler.lock(tenant.namespace, tenant.name):
            with contextlib.suppress(Exception):
                await reconciler.publish(tenant.namespace, tenant.name, {})
            try:
                fate = await reconciler.remove(tenant)
            except PlacementError as e:  # the database is not this tenant's (any more): never touch it
                kopf.warn(body, reason="Refused", message=f"{e}; the resource is released, the database untouched")
                return
            except Exception as e:
                delay = backoff(retry)
                message = f"deletion: {type(e).__name__}: {e}; retrying in {delay:.0f}s"
                kopf.warn(body, reason="Retrying", message=message)
                raise kopf.TemporaryError(str(e), delay=delay) from e
        kopf.info(body, reason="Deleted", message=fate)
