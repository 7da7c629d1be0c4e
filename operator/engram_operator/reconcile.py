"""Reconciling one MemoryTenant: place it, provision its schema, apply its children, report status.

Every step is idempotent, so create, update, resume and the drift timer all run the same code.
One lock per tenant serialises them (and the status writes), as they run as concurrent tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import kopf

from engram.domain.embedders import BUNDLED_DIMENSIONS
from engram.domain.tenancy import new_key
from engram_operator.config import Instance, OperatorConfig
from engram_operator.drift import drifted, with_digest
from engram_operator.kube import Applied, Kube
from engram_operator.manifests import (
    KEY_ROTATION,
    TenantView,
    autoscaling,
    backup,
    ingress,
    ingress_url,
    most_replicas,
    needs_disruption_budget,
    pool_size,
    render_autoscaler,
    render_backup_cronjob,
    render_client_secret,
    render_cronjob,
    render_database_secret,
    render_deployment,
    render_disruption_budget,
    render_ingress,
    render_network_policy,
    render_service,
    secret_values,
)
from engram_operator.placement import PlacementError, Survey, candidates, choose, place
from engram_operator.provision import Claim, Provisioned, drop_tenant, ensure_tenant, retire_tenant, survey
from engram_operator.rollouts import Rollouts
from engram_operator.status import Check, deployment_readiness, kstatus_checks, merge_conditions, phase_of

PAUSED = "memory.engram.dev/paused"
# Where the tenant lives, written by the operator when it places it: a status can be lost (a
# restore, a re-created resource), and the database's claim is there to find it again too.
INSTANCE = "memory.engram.dev/instance"
# Set (or changed) to any value, a new API key is issued; the ones before stay valid for
# spec.apiKey.rotationOverlapSeconds, so that every agent can move to the new one meanwhile.
ROTATE_KEY = "memory.engram.dev/rotate-key"
DEFAULT_KEY_OVERLAP_SECONDS = 3600


class InvalidSpec(Exception):
    """The spec asks for something that cannot be built; only a new spec helps."""


@dataclass(frozen=True)
class Tenant:
    """What the operator reads from a MemoryTenant."""

    body: dict[str, Any]

    @property
    def name(self) -> str:
        return self.body["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.body["metadata"]["namespace"]

    @property
    def uid(self) -> str:
        return str(self.body["metadata"].get("uid", ""))

    @property
    def generation(self) -> int:
        return int(self.body["metadata"].get("generation", 1))

    @property
    def spec(self) -> dict[str, Any]:
        return self.body.get("spec") or {}

    @property
    def status(self) -> dict[str, Any]:
        return self.body.get("status") or {}

    @property
    def paused(self) -> bool:
        """Annotated `memory.engram.dev/paused: "true"`: the operator changes nothing (maintenance,
        a hand-made fix, a restore) until the annotation goes; deletion still proceeds."""
        return self.annotations.get(PAUSED) == "true"

    @property
    def was_paused(self) -> bool:
        """The status still says paused (the operator has not reconciled since)."""
        return any(c.get("type") == "Paused" and c.get("status") == "True" for c in self.status.get("conditions") or [])

    @property
    def annotations(self) -> dict[str, str]:
        return self.body["metadata"].get("annotations") or {}

    @property
    def recorded_instance(self) -> str | None:
        """The instance the operator placed the tenant on, as the resource records it."""
        annotated, reported = self.annotations.get(INSTANCE), self.status.get("instance")
        if annotated and reported and annotated != reported:
            raise InvalidSpec(
                f"the tenant lives on {reported!r} but its annotation {INSTANCE} says {annotated!r}: "
                "moving a tenant is not supported; restore the annotation"
            )
        return annotated or reported


@dataclass
class Outcome:
    provisioned: Provisioned
    mcp_url: str
    changed: dict[str, Applied]  # "Deployment/engram-x" -> created | updated
    ready: Check
    degraded: Check
    model_pending: str | None  # why the spec's embedding model is not in use yet
    key_rotated: str | None = None  # what became of the keys, when the rotate-key annotation asked
    rollout_pending: str | None = None  # why the new pod template waits (rollouts.py)

    @property
    def provisioned_check(self) -> Check:
        p = self.provisioned
        message = f"schema {p.schema} on instance {p.instance}, role {p.role}"
        return Check(True, "SchemaReady", f"{message}; {self.model_pending}" if self.model_pending else message)


def connection_limit(spec: dict[str, Any]) -> int:
    """The tenant role's CONNECTION LIMIT: as the spec says, or room for every replica's pool, the
    lifecycle job's and a migration's."""
    database = spec.get("database") or {}
    if "connectionLimit" in database:
        return int(database["connectionLimit"])
    backups = 1 if backup(spec) is not None else 0  # pg_dump's one session
    return (most_replicas(spec) + 1) * pool_size(spec) + 2 + backups


def embedding_of(spec: dict[str, Any]) -> tuple[str, int]:
    embedding = spec.get("embedding") or {}
    model = embedding.get("model") or "use-multilingual-v3"
    if model in BUNDLED_DIMENSIONS:
        return model, BUNDLED_DIMENSIONS[model]
    if not embedding.get("dimension"):
        raise InvalidSpec(f"spec.embedding.dimension is required for the model {model!r}")
    return model, int(embedding["dimension"])


@dataclass(frozen=True)
class Credentials:
    """The tenant's database password and API key, kept from its Secrets or made anew."""

    password: str
    new_password: bool
    key: str
    # A key made by a rotation: the ones before stay valid this many seconds. None: the key is
    # the one the Secret holds, or a new one because it was lost (the others are revoked at once).
    key_overlap: float | None
    rotation: str | None  # the rotate-key annotation's value the key answers


def credentials_of(tenant: Tenant, database: dict[str, Any] | None, client: dict[str, Any] | None) -> Credentials:
    """Kept from the Secrets; a new key when the client Secret lost it, or when the tenant's
    rotate-key annotation has a value the client Secret's key was not made for."""
    db_values = secret_values(database) if database else {}
    client_values = secret_values(client) if client else {}
    password = unquote(urlsplit(db_values.get("dsn", "")).password or "")
    key = client_values.get("api-key", "")
    handled = ((client or {}).get("metadata", {}).get("annotations") or {}).get(KEY_ROTATION)
    requested = tenant.annotations.get(ROTATE_KEY)
    overlap = None
    if not key.startswith(f"ek.{tenant.name}."):
        key = new_key(tenant.name)
    elif requested and requested != handled:
        key = new_key(tenant.name)
        overlap = float((tenant.spec.get("apiKey") or {}).get("rotationOverlapSeconds", DEFAULT_KEY_OVERLAP_SECONDS))
    return Credentials(password or secrets.token_urlsafe(24), not password, key, overlap, requested or handled)


class Reconciler:
    def __init__(self, config: OperatorConfig, kube: Kube) -> None:
        self.config = config
        self.kube = kube
        self._locks: defaultdict[tuple[str, str], asyncio.Lock] = defaultdict(asyncio.Lock)
        self._cluster_id: str | None = None
        self.rollouts = Rollouts(config.max_concurrent_rollouts)

    def lock(self, namespace: str, name: str) -> asyncio.Lock:
        return self._locks[(namespace, name)]

    async def claim_of(self, tenant: Tenant) -> Claim:
        """Who holds the tenant's name in its database: this MemoryTenant of this cluster."""
        if self._cluster_id is None:
            self._cluster_id = self.config.cluster_id or await self.kube.cluster_uid()
        former = f"k8s:{tenant.namespace}/{tenant.name}"  # before claims named the cluster
        return Claim(f"k8s:{self._cluster_id}/{tenant.namespace}/{tenant.name}", former)

    async def _find(self, tenant: Tenant, claim: Claim) -> list[Survey]:
        """Every instance the tenant may live on, surveyed: is it there, and how many tenants are."""
        serving = candidates(tenant.spec.get("environment", ""), self.config.instances)
        return list(await asyncio.gather(*(survey(i, tenant.name, claim) for i in serving)))

    async def instance_of(self, tenant: Tenant, claim: Claim) -> Instance:
        """The instance the tenant lives on, or goes to: one of its own environment, never moved."""
        environment = tenant.spec.get("environment", "")
        policy = self.config.environment_policy
        if policy is not None and environment not in policy.allowed(tenant.namespace):
            allowed = " or ".join(policy.allowed(tenant.namespace)) or "no environment"
            raise PlacementError(
                f"namespace {tenant.namespace!r} may not ask for the {environment} environment "
                f"(the operator's environmentPolicy allows it {allowed}): refused"
            )
        placed = tenant.recorded_instance
        requested = (tenant.spec.get("database") or {}).get("instance")
        if placed and requested and requested != placed:
            raise InvalidSpec(f"the tenant lives on {placed!r}; moving it to {requested!r} is not supported")
        chosen = requested or placed or choose(await self._find(tenant, claim))
        return place(environment, chosen, self.config.instances)

    def view(self, tenant: Tenant, **extra: Any) -> TenantView:
        child = f"engram-{tenant.name}"
        return TenantView(
            name=tenant.name,
            namespace=tenant.namespace,
            environment=tenant.spec.get("environment", ""),
            image=self.config.image,
            image_pull_policy=self.config.image_pull_policy,
            image_pull_secrets=tuple(self.config.image_pull_secrets),
            public_url=ingress_url(tenant.spec)
            or self.config.public_url_template.format(service=child, namespace=tenant.namespace, tenant=tenant.name),
            spec=tenant.spec,
            **extra,
        )

    async def reconcile(self, tenant: Tenant) -> Outcome:
        """Bring the tenant to its spec; raises PlacementError/InvalidSpec (permanent) or transient errors."""
        claim = await self.claim_of(tenant)
        instance = await self.instance_of(tenant, claim)
        model, dim = embedding_of(tenant.spec)
        self._check_ingress_annotations(tenant.spec)
        if tenant.annotations.get(INSTANCE) != instance.name:  # recorded before anything is made there
            await self.kube.annotate(tenant.namespace, tenant.name, {INSTANCE: instance.name})
        bare = self.view(tenant)
        database, client, legacy = [
            await self.kube.get("v1", "Secret", tenant.namespace, secret)
            for secret in (bare.database_secret_name, bare.client_secret_name, bare.legacy_secret_name)
        ]
        given = credentials_of(tenant, database or legacy, client or legacy)
        provisioned = await ensure_tenant(
            instance,
            tenant.name,
            model,
            dim,
            given.password,
            given.key,
            claim,
            new_password=given.new_password,
            connection_limit=connection_limit(tenant.spec),
            key_overlap=given.key_overlap or 0.0,
        )
        ca = instance.tls.root_cert
        view = self.view(
            tenant,
            embedding_model=provisioned.embedding_model,
            # What the pods use: the DSN and the CA (the API key is the agents', checked in the database).
            credentials_digest=hashlib.sha256(f"{provisioned.dsn}\n{ca or ''}".encode()).hexdigest()[:16],
            database_ca=ca,
        )
        changed: dict[str, Applied] = {}
        children = [
            render_database_secret(view, provisioned.dsn),
            render_client_secret(view, given.key, given.rotation),
            render_deployment(view),
            render_service(view),
            render_cronjob(view),
        ]
        optional = (
            (bool((tenant.spec.get("networkPolicy") or {}).get("enabled")), render_network_policy),
            (autoscaling(tenant.spec) is not None, render_autoscaler),
            (needs_disruption_budget(tenant.spec), render_disruption_budget),
            (ingress(tenant.spec) is not None, render_ingress),
            (backup(tenant.spec) is not None, render_backup_cronjob),
        )
        for wanted, render in optional:
            if wanted:
                children.append(render(view))
                continue
            unwanted = render(view)
            kind, child_name = unwanted["kind"], unwanted["metadata"]["name"]
            if await self.kube.delete_owned(unwanted["apiVersion"], kind, tenant.namespace, child_name, tenant.uid):
                changed[f"{kind}/{child_name}"] = "deleted"
        rollout_pending = None
        for child in children:
            kopf.adopt(child, owner=tenant.body)
            if child["kind"] == "Deployment":
                # A new password cannot wait: the running pods' old one no longer logs in.
                applied, rollout_pending = await self._apply_deployment(tenant, child, urgent=given.new_password)
            else:
                applied = await self.kube.apply(child)
            if applied != "unchanged":
                changed[f"{child['kind']}/{child['metadata']['name']}"] = applied
        # The old Secret goes once the Deployment no longer reads it (a pod restarting meanwhile needs it).
        if (
            legacy is not None
            and rollout_pending is None
            and await self.kube.delete("v1", "Secret", tenant.namespace, view.legacy_secret_name)
        ):
            changed[f"Secret/{view.legacy_secret_name}"] = "deleted"  # split into the two above
        deployment = await self.kube.get("apps/v1", "Deployment", tenant.namespace, view.child_name)
        pending = None
        if provisioned.embedding_model != model:
            pending = (
                f"spec asks for {model} but the vectors are {provisioned.embedding_model}: run "
                f"`engram reindex --tenant {tenant.name} --model {model}` (until then the service keeps the old model)"
            )
        rotated = None
        if given.key_overlap is not None:
            rotated = (
                f"a new API key is in Secret {view.client_secret_name}; the keys before it stay valid for "
                f"{given.key_overlap:.0f}s"
            )
        readiness = deployment_readiness(deployment)
        return Outcome(provisioned, view.mcp_url(), changed, *readiness, pending, rotated, rollout_pending)

    def _check_ingress_annotations(self, spec: dict[str, Any]) -> None:
        allowed = self.config.ingress_annotation_prefixes
        refused = sorted(k for k in (ingress(spec) or {}).get("annotations") or {} if not k.startswith(tuple(allowed)))
        if refused:
            raise InvalidSpec(
                f"spec.ingress.annotations {', '.join(refused)}: not allowed (the operator's "
                f"ingressAnnotationPrefixes allow {', '.join(allowed) or 'none'})"
            )

    async def _apply_deployment(
        self, tenant: Tenant, deployment: dict[str, Any], urgent: bool = False
    ) -> tuple[Applied, str | None]:
        """Apply the Deployment; a change of its pod template (a rollout) only when a slot is free,
        unless ``urgent``. Returns what was done, and why the rollout waits if it does."""
        name = deployment["metadata"]["name"]
        live = await self.kube.get("apps/v1", "Deployment", tenant.namespace, name)
        live_replicas = ((live or {}).get("spec") or {}).get("replicas")
        handing_over = "replicas" not in deployment["spec"] and live_replicas is not None
        if handing_over and drifted(with_digest(deployment), live):
            # The autoscaler takes the count over from here: keep it until it does.
            await self.kube.hand_over("apps/v1", "Deployment", tenant.namespace, name, {"replicas": live_replicas})
        if live is None or not drifted(deployment["spec"]["template"], (live.get("spec") or {}).get("template")):
            return await self.kube.apply(deployment, live), None  # a new tenant, or no pod to replace
        async with self.rollouts.lock:
            waiting = None if urgent else self.rollouts.waiting_message(tenant.namespace, tenant.name)
            if waiting is not None:
                return "unchanged", waiting
            applied = await self.kube.apply(deployment, live)
            self.rollouts.started(tenant.namespace, tenant.name)
        return applied, None

    async def remove(self, tenant: Tenant) -> str:
        """Delete the children; then retain (lock) or drop the schema. Returns what became of the data."""
        view = self.view(tenant)
        for api_version, kind, name in (
            ("apps/v1", "Deployment", view.child_name),
            ("batch/v1", "CronJob", f"{view.child_name}-lifecycle"),
            ("batch/v1", "CronJob", f"{view.child_name}-backup"),
            ("v1", "Service", view.child_name),
            ("networking.k8s.io/v1", "NetworkPolicy", view.child_name),
            ("autoscaling/v2", "HorizontalPodAutoscaler", view.child_name),
            ("policy/v1", "PodDisruptionBudget", view.child_name),
            ("networking.k8s.io/v1", "Ingress", view.child_name),
            ("v1", "Secret", view.database_secret_name),
            ("v1", "Secret", view.client_secret_name),
            ("v1", "Secret", view.legacy_secret_name),
        ):
            await self.kube.delete_owned(api_version, kind, tenant.namespace, name, tenant.uid)
        claim = await self.claim_of(tenant)
        placed = None
        with contextlib.suppress(InvalidSpec):  # records that disagree: the databases decide
            placed = tenant.recorded_instance
        if not placed:  # no record on the resource: the databases know whether it lives anywhere
            with contextlib.suppress(PlacementError):  # no instance serves its environment
                placed = next((s.instance for s in await self._find(tenant, claim) if s.holds_tenant), None)
        if not placed:
            return "never provisioned: no data to keep or drop"
        instance = next((i for i in self.config.instances if i.name == placed), None)
        if instance is None:
            return f"instance {placed!r} is no longer configured: its schema was left as it is"
        if tenant.spec.get("deletionPolicy") == "Delete":
            await drop_tenant(instance, tenant.name, claim)
            return f"schema and role dropped on {placed}"
        await retire_tenant(instance, tenant.name, claim)
        return f"schema kept on {placed} (deletionPolicy Retain); its role cannot log in until the tenant returns"

    async def publish(
        self,
        namespace: str,
        name: str,
        updates: dict[str, Check],
        generation: int | None = None,
        pending: str | None = None,
        **fields: Any,
    ) -> tuple[dict[str, Any], str] | None:
        """Merge ``updates`` into the tenant's live status (read now) and write it.
        Returns (the live object, the phase before), or None when the tenant is gone."""
        live = await self.kube.get("memory.engram.dev/v1alpha1", "MemoryTenant", namespace, name)
        if live is None:
            return None
        before = live.get("status") or {}
        observed = generation if generation is not None else before.get("observedGeneration", 0)
        conditions = merge_conditions(before.get("conditions") or [], updates, observed)
        phase, message = phase_of(conditions)
        if live["metadata"].get("deletionTimestamp"):
            phase, message = "Deleting", "removing the tenant's children"
        current = live["metadata"].get("generation", 0)
        conditions = merge_conditions(conditions, kstatus_checks(phase, message, observed, current, pending), observed)
        status = {**fields, "conditions": conditions, "phase": phase, "message": message}
        if generation is not None:
            status["observedGeneration"] = generation
        if any(before.get(k) != v for k, v in status.items()):
            await self.kube.patch_status(namespace, name, status)
        return live, before.get("phase", "")
