"""Pure builders of the Kubernetes objects a MemoryTenant owns (no API calls here)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from engram.domain.tenancy import schema_name

HTTP_PORT = 8080
UID = 10001
# Where a tenant's pods find the CA that verifies their database server (from the database Secret).
DATABASE_CA_DIR = "/etc/engram/database"
DATABASE_CA_PATH = f"{DATABASE_CA_DIR}/ca.crt"


@dataclass(frozen=True)
class TenantView:
    """What the builders need from a MemoryTenant and the operator's configuration."""

    name: str
    namespace: str
    environment: str
    image: str
    spec: dict[str, Any] = field(default_factory=dict)
    public_url: str = ""  # base of the MCP URL; default: the Service's cluster DNS name
    image_pull_policy: str = "IfNotPresent"
    embedding_model: str | None = None  # the model the tenant's vectors are made with
    # A digest of the database Secret's contents on the pod template: new credentials roll the pods.
    credentials_digest: str = ""
    database_ca: str | None = None  # PEM of the CA the pods verify the database server with
    image_pull_secrets: tuple[str, ...] = ()  # Secrets of the tenant's namespace the kubelet pulls with

    @property
    def child_name(self) -> str:
        return f"engram-{self.name}"

    @property
    def database_secret_name(self) -> str:
        """The service's Secret: the DSN with the tenant role's password (and the CA). Only the
        tenant's own pods need it; whoever reads it can run SQL in the tenant's schema."""
        return f"engram-{self.name}-database"

    @property
    def client_secret_name(self) -> str:
        """The agents' Secret: the API key and the URLs, and nothing that opens the database."""
        return f"engram-{self.name}-client"

    @property
    def legacy_secret_name(self) -> str:
        """Where both lived before they were split (read once for the credentials, then deleted)."""
        return f"engram-{self.name}-credentials"

    @property
    def labels(self) -> dict[str, str]:
        return {
            "app.kubernetes.io/name": "engram",
            "app.kubernetes.io/instance": self.name,
            "app.kubernetes.io/managed-by": "engram-operator",
            "memory.engram.dev/tenant": self.name,
            "memory.engram.dev/environment": self.environment,
        }

    @property
    def selector(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": "engram", "app.kubernetes.io/instance": self.name}

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.child_name}.{self.namespace}.svc:{HTTP_PORT}").rstrip("/")

    def mcp_url(self) -> str:
        return f"{self.base_url}/t/{self.name}/mcp"


def _metadata(t: TenantView, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": t.namespace, "labels": t.labels}


# On the client Secret: the value of the tenant's rotate-key annotation its key was made for.
KEY_ROTATION = "memory.engram.dev/key-rotation"


def _secret(t: TenantView, name: str, values: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    metadata = _metadata(t, name) | ({"annotations": annotations} if annotations else {})
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        # `data`, not `stringData`: it is what the API server returns, so drift is a plain comparison.
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()},
    }


def render_database_secret(t: TenantView, dsn: str) -> dict[str, Any]:
    values = {"dsn": dsn} | ({"ca.crt": t.database_ca} if t.database_ca else {})
    return _secret(t, t.database_secret_name, values, {})


def render_client_secret(t: TenantView, api_key: str, rotation: str | None) -> dict[str, Any]:
    values = {"api-key": api_key, "mcp-url": t.mcp_url(), "rest-url": f"{t.base_url}/t/{t.name}/v1"}
    return _secret(t, t.client_secret_name, values, {KEY_ROTATION: rotation} if rotation else {})


def secret_values(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


DEFAULT_POOL_SIZE = 5
# A lifecycle run not started within this long of its time is skipped; one running longer is stopped.
LIFECYCLE_DEADLINE_SECONDS = 3600


def pool_size(spec: dict[str, Any]) -> int:
    """Connections each of the tenant's pods keeps at most (spec.database.poolSize)."""
    return int((spec.get("database") or {}).get("poolSize", DEFAULT_POOL_SIZE))


def _env(t: TenantView) -> list[dict[str, Any]]:
    hosts = [
        f"{t.child_name}:*",
        f"{t.child_name}.{t.namespace}:*",
        f"{t.child_name}.{t.namespace}.svc:*",
        f"{t.child_name}.{t.namespace}.svc.cluster.local:*",
        "localhost:*",
        "127.0.0.1:*",
    ]
    public_host = urlsplit(t.base_url).hostname
    if public_host and f"{public_host}:*" not in hosts:
        hosts += [public_host, f"{public_host}:*"]  # a Host header without a port needs the bare name
    env = [
        {
            "name": "ENGRAM_DATABASE_URL",
            "valueFrom": {"secretKeyRef": {"name": t.database_secret_name, "key": "dsn"}},
        },
        {"name": "ENGRAM_TENANT", "value": t.name},
        {"name": "ENGRAM_ENVIRONMENT", "value": t.environment},
        {"name": "ENGRAM_PUBLIC_URL", "value": t.base_url},
        {"name": "ENGRAM_ALLOWED_HOSTS", "value": json.dumps(hosts)},
        {"name": "ENGRAM_STATE_DIR", "value": "/tmp/engram"},
        {"name": "ENGRAM_POOL_MIN_SIZE", "value": "1"},
        {"name": "ENGRAM_POOL_MAX_SIZE", "value": str(pool_size(t.spec))},
    ]
    if t.embedding_model:
        env.append({"name": "ENGRAM_EMBEDDING_MODEL", "value": t.embedding_model})
    embedding = t.spec.get("embedding") or {}
    env += _api_env("ENGRAM_EMBEDDING_API_BASE", "ENGRAM_EMBEDDING_API_KEY", embedding)
    retrieval = t.spec.get("retrieval", {})
    for key, value in retrieval.get("weights", {}).items():
        env.append({"name": f"ENGRAM_RETRIEVAL__{key.upper()}_WEIGHT", "value": str(value)})
    if "topK" in retrieval:
        env.append({"name": "ENGRAM_RETRIEVAL__DEFAULT_TOP_K", "value": str(retrieval["topK"])})
    if "candidates" in retrieval:
        env.append({"name": "ENGRAM_RETRIEVAL__CANDIDATES", "value": str(retrieval["candidates"])})
    forgetting = t.spec.get("forgetting", {})
    if "threshold" in forgetting:
        env.append({"name": "ENGRAM_LIFECYCLE__FORGET_THRESHOLD", "value": str(forgetting["threshold"])})
    if "retentionDays" in forgetting:
        env.append({"name": "ENGRAM_LIFECYCLE__RETENTION_DAYS", "value": str(forgetting["retentionDays"])})
    llm = t.spec.get("llm", {})
    if llm.get("model"):
        env.append({"name": "ENGRAM_LLM__MODEL", "value": llm["model"]})
        env += _api_env("ENGRAM_LLM__API_BASE", "ENGRAM_LLM__API_KEY", llm)
    return env


def _api_env(base_variable: str, key_variable: str, api: dict[str, Any]) -> list[dict[str, Any]]:
    """A model API's base URL, and its key from the Secret the spec names (never in the spec)."""
    env: list[dict[str, Any]] = []
    if api.get("apiBase"):
        env.append({"name": base_variable, "value": api["apiBase"]})
    ref = api.get("secretRef")
    if ref:
        key_ref = {"name": ref["name"], "key": ref.get("key", "api-key")}
        env.append({"name": key_variable, "valueFrom": {"secretKeyRef": key_ref}})
    return env


def _restricted() -> dict[str, Any]:
    """Every container the operator runs: not root, no privilege to gain, nothing written outside its volumes."""
    return {
        "runAsNonRoot": True,
        "runAsUser": UID,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _container(t: TenantView, args: list[str]) -> dict[str, Any]:
    return {
        "name": "engram",
        "image": t.image,
        "imagePullPolicy": t.image_pull_policy,
        "args": args,
        "env": _env(t),
        "securityContext": _restricted(),
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, *_database_ca_mount(t)],
    }


def _pod_spec(t: TenantView, container: dict[str, Any], restart: str) -> dict[str, Any]:
    return {
        "restartPolicy": restart,
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "fsGroup": UID, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "tmp", "emptyDir": {}}, *_database_ca_volume(t)],
    } | _scheduling(t)


def _scheduling(t: TenantView) -> dict[str, Any]:
    """The spec's placement of the pods, and the pull secrets of the operator's configuration."""
    scheduling = t.spec.get("scheduling") or {}
    fields = {
        k: scheduling[k] for k in ("nodeSelector", "tolerations", "affinity", "priorityClassName") if k in scheduling
    }
    if t.image_pull_secrets:
        fields["imagePullSecrets"] = [{"name": name} for name in t.image_pull_secrets]
    return fields


def _database_ca_mount(t: TenantView) -> list[dict[str, Any]]:
    return [{"name": "database-ca", "mountPath": DATABASE_CA_DIR, "readOnly": True}] if t.database_ca else []


def _database_ca_volume(t: TenantView) -> list[dict[str, Any]]:
    if not t.database_ca:
        return []
    items = [{"key": "ca.crt", "path": "ca.crt"}]
    secret = {"secretName": t.database_secret_name, "items": items, "defaultMode": 0o444}
    return [{"name": "database-ca", "secret": secret}]


def autoscaling(spec: dict[str, Any]) -> dict[str, Any] | None:
    """spec.autoscaling: the HorizontalPodAutoscaler owns the replica count, not the operator."""
    return spec.get("autoscaling") or None


def most_replicas(spec: dict[str, Any]) -> int:
    """The most pods the tenant may run at once: what its connection limit must leave room for."""
    scaling = autoscaling(spec)
    return int(scaling["maxReplicas"]) if scaling else int(spec.get("replicas", 1))


def fewest_replicas(spec: dict[str, Any]) -> int:
    scaling = autoscaling(spec)
    return int(scaling.get("minReplicas", 1)) if scaling else int(spec.get("replicas", 1))


def render_deployment(t: TenantView) -> dict[str, Any]:
    container = _container(t, ["serve"])
    container["env"].append({"name": "ENGRAM_HOST", "value": "0.0.0.0"})
    container["env"].append({"name": "ENGRAM_PORT", "value": str(HTTP_PORT)})
    # Forgetting and consolidation run in the CronJob, once, not in every replica.
    container["env"].append({"name": "ENGRAM_LIFECYCLE__SCHEDULER_ENABLED", "value": "false"})
    container["ports"] = [{"name": "http", "containerPort": HTTP_PORT}]
    container["resources"] = t.spec.get("resources") or {
        "requests": {"cpu": "100m", "memory": "512Mi"},
        "limits": {"memory": "1Gi"},
    }
    probe = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10}
    container["livenessProbe"] = {**probe, "initialDelaySeconds": 30}
    container["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 5}
    container["startupProbe"] = {**probe, "failureThreshold": 30}
    # Under an autoscaler the replica count is not the operator's to set: a manifest without it
    # leaves the field to the HorizontalPodAutoscaler (and `kubectl scale`), never reverted.
    replicas = {} if autoscaling(t.spec) else {"replicas": t.spec.get("replicas", 1)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(t, t.child_name),
        "spec": {
            **replicas,
            "selector": {"matchLabels": t.selector},
            "template": {
                "metadata": {
                    "labels": t.labels,
                    "annotations": {
                        "memory.engram.dev/credentials-digest": t.credentials_digest,
                        # The common convention for Prometheus' pod discovery: /metrics on the http port.
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(HTTP_PORT),
                        "prometheus.io/path": "/metrics",
                    },
                },
                "spec": _pod_spec(t, container, "Always") | _spread(t),
            },
        },
    }


def _spread(t: TenantView) -> dict[str, Any]:
    """More than one replica: spread over nodes where the scheduler can, so one node's loss does
    not take the tenant down."""
    if most_replicas(t.spec) <= 1:
        return {}
    constraint = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": t.selector},
    }
    return {"topologySpreadConstraints": [constraint]}


def render_autoscaler(t: TenantView) -> dict[str, Any]:
    """spec.autoscaling: between minReplicas and maxReplicas pods, by CPU utilisation."""
    scaling = autoscaling(t.spec) or {}
    target = int(scaling.get("targetCPUUtilizationPercentage", 80))
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(t, t.child_name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": t.child_name},
            "minReplicas": fewest_replicas(t.spec),
            "maxReplicas": most_replicas(t.spec),
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}},
                }
            ],
        },
    }


def needs_disruption_budget(spec: dict[str, Any]) -> bool:
    """With more than one pod, a node drain must leave some serving; with one, a budget would
    block the drain forever."""
    return fewest_replicas(spec) > 1


def render_disruption_budget(t: TenantView) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _metadata(t, t.child_name),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": t.selector}},
    }


def render_service(t: TenantView) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(t, t.child_name),
        "spec": {
            "type": "ClusterIP",
            "selector": t.selector,
            "ports": [{"name": "http", "port": HTTP_PORT, "targetPort": "http"}],
        },
    }


def render_cronjob(t: TenantView) -> dict[str, Any]:
    container = _container(t, [])
    container.pop("args")
    container["command"] = ["sh", "-c", f"engram forget --tenant {t.name} && engram consolidate --tenant {t.name}"]
    forgetting = t.spec.get("forgetting", {})
    # Requests and limits, so a namespace's ResourceQuota admits the job instead of silently
    # stopping forgetting; deadlines, so a stuck run neither blocks the next ones nor lingers.
    container["resources"] = forgetting.get("resources") or {
        "requests": {"cpu": "50m", "memory": "512Mi"},
        "limits": {"memory": "1Gi"},
    }
    schedule = forgetting.get("schedule", "17 3 * * 0")
    pod = _pod_spec(t, container, "OnFailure")
    return _cronjob(t, f"{t.child_name}-lifecycle", schedule, pod, LIFECYCLE_DEADLINE_SECONDS)


def _cronjob(t: TenantView, name: str, schedule: str, pod: dict[str, Any], deadline: int) -> dict[str, Any]:
    """A job on a schedule: never two at once, skipped when it could not start within the hour,
    stopped after ``deadline`` seconds, its finished runs gone after a day."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _metadata(t, name),
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": LIFECYCLE_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 2,
                    "activeDeadlineSeconds": deadline,
                    "ttlSecondsAfterFinished": 86400,
                    "template": {"metadata": {"labels": t.labels}, "spec": pod},
                }
            },
        },
    }


# Where the backup job's volume is mounted, and how long one run may take.
BACKUP_DIR = "/backup"
BACKUP_DEADLINE_SECONDS = 6 * 3600
DEFAULT_BACKUP_IMAGE = "postgres:18-alpine"


def backup(spec: dict[str, Any]) -> dict[str, Any] | None:
    """spec.backup, when enabled."""
    wanted = spec.get("backup") or {}
    return wanted if wanted.get("enabled") else None


def backup_script(tenant: str, schema: str, keep: int) -> str:
    """One backup run: a custom-format `pg_dump -n` of the tenant's schema, as the tenant's role,
    into ``$BACKUP_DIR/<tenant>/<tenant>-<UTC time>.dump`` (written aside, then renamed: a dump
    cut short never looks complete), then all but the newest ``keep`` removed."""
    return "\n".join(
        [
            "set -eu",
            f'dir="$BACKUP_DIR/{tenant}"',
            'mkdir -p "$dir"',
            "stamp=$(date -u +%Y%m%dT%H%M%SZ)",
            # A run stopped half-way (its deadline, OOM) leaves nothing behind, nor did earlier ones.
            "trap 'rm -f \"$dir/.partial-$stamp\"' EXIT",
            'find "$dir" -maxdepth 1 -name ".partial-*" -mmin +60 -exec rm -f {} +',
            f'pg_dump --dbname="$DATABASE_URL" --schema={schema} --format=custom --file="$dir/.partial-$stamp"',
            f'mv "$dir/.partial-$stamp" "$dir/{tenant}-$stamp.dump"',
            f'ls -1 "$dir"/{tenant}-*.dump | sort -r | tail -n +{keep + 1} | xargs -r rm -f --',
            f'echo "backed up {tenant} to $dir/{tenant}-$stamp.dump"',
        ]
    )


def render_backup_cronjob(t: TenantView) -> dict[str, Any]:
    """spec.backup: a logical backup of the tenant's schema on a schedule, into its volume."""
    wanted = backup(t.spec) or {}
    schema = schema_name(t.name)
    container = {
        "name": "backup",
        "image": wanted.get("image") or DEFAULT_BACKUP_IMAGE,
        "imagePullPolicy": t.image_pull_policy,
        "command": ["sh", "-c", backup_script(t.name, schema, int(wanted.get("keep", 7)))],
        "env": [
            {
                "name": "DATABASE_URL",
                "valueFrom": {"secretKeyRef": {"name": t.database_secret_name, "key": "dsn"}},
            },
            {"name": "BACKUP_DIR", "value": BACKUP_DIR},
            {"name": "HOME", "value": "/tmp"},
        ],
        "resources": wanted.get("resources")
        or {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": _restricted(),
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "backup", "mountPath": BACKUP_DIR},
            *_database_ca_mount(t),
        ],
    }
    pod = _pod_spec(t, container, "OnFailure")
    pod["volumes"].append(
        {"name": "backup", "persistentVolumeClaim": {"claimName": wanted.get("persistentVolumeClaim")}}
    )
    schedule = wanted.get("schedule", "30 2 * * *")
    return _cronjob(t, f"{t.child_name}-backup", schedule, pod, BACKUP_DEADLINE_SECONDS)


def render_network_policy(t: TenantView) -> dict[str, Any]:
    """Only pods of the tenant's namespace reach its service (and its ingress controller's, if named)."""
    peers: list[dict[str, Any]] = [{"podSelector": {}}]
    controller = (ingress(t.spec) or {}).get("controllerNamespace")
    if controller:
        peers.append({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": controller}}})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(t, t.child_name),
        "spec": {
            "podSelector": {"matchLabels": t.selector},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": peers, "ports": [{"port": HTTP_PORT, "protocol": "TCP"}]}],
        },
    }


def ingress(spec: dict[str, Any]) -> dict[str, Any] | None:
    """spec.ingress, when enabled."""
    wanted = spec.get("ingress") or {}
    return wanted if wanted.get("enabled") else None


def ingress_url(spec: dict[str, Any]) -> str | None:
    """The base URL agents reach the tenant at through its Ingress."""
    wanted = ingress(spec)
    if wanted is None:
        return None
    return f"{'https' if wanted.get('tlsSecretName') else 'http'}://{wanted['host']}"


def render_ingress(t: TenantView) -> dict[str, Any]:
    """The host's paths under /t/<name> (MCP, SSE, REST) to the tenant's service; nothing else of it."""
    wanted = ingress(t.spec) or {}
    backend = {"service": {"name": t.child_name, "port": {"name": "http"}}}
    spec: dict[str, Any] = {
        "rules": [
            {
                "host": wanted.get("host"),
                "http": {"paths": [{"path": f"/t/{t.name}", "pathType": "Prefix", "backend": backend}]},
            }
        ]
    }
    if wanted.get("className"):
        spec["ingressClassName"] = wanted["className"]
    if wanted.get("tlsSecretName"):
        spec["tls"] = [{"hosts": [wanted.get("host")], "secretName": wanted["tlsSecretName"]}]
    metadata = _metadata(t, t.child_name)
    if wanted.get("annotations"):
        metadata["annotations"] = dict(wanted["annotations"])
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": spec}
