"""The operator's configuration: which database instances exist and which environment each serves.

Read from a YAML file (a ConfigMap in the Helm chart) named by ENGRAM_OPERATOR_CONFIG:

    image: engram:0.1.0
    imagePullPolicy: IfNotPresent
    imagePullSecrets: [registry-credentials]   # in each tenant's namespace
    driftIntervalSeconds: 60            # how often children and schemas are re-checked and repaired
    maxConcurrentRollouts: 5            # tenants whose pods roll at once after an upgrade
    ingressAnnotationPrefixes: [cert-manager.io/]   # what spec.ingress.annotations may set
    publicUrlTemplate: "http://{service}.{namespace}.svc:8080"   # base of each tenant's MCP URL
    clusterId: eu-prod-1                # names this cluster in the databases (default: kube-system's uid)
    leaderElection: {namespace: engram-system}   # one operator acts at a time (a Lease there)
    environmentPolicy:                  # which environments a namespace's tenants may ask for
      namespaces: {agents: [prod, test], agents-dev: [test]}
      default: []                       # every other namespace (unset policy: any namespace, any)
    instances:
      - name: pg-test
        environment: test
        adminDsnEnv: PG_TEST_ADMIN_DSN     # the admin DSN comes from this env var (a Secret)
        tenantHost: pg-test.databases.svc  # host:port the tenants' pods use (default: the DSN's)
        tls:                               # how the tenants' pods verify the server
          mode: verify-full                # default: the admin DSN's sslmode
          rootCertEnv: PG_TEST_CA          # the CA's PEM (from a Secret); or rootCert: inline PEM

The admin DSN's connection parameters (sslmode, connect_timeout, ...) reach the tenants' DSNs too,
except the paths of files on the operator's own disk (sslrootcert, sslcert, sslkey ...): a
tenant's pod verifies the server with the CA of ``tls``, mounted from its credentials Secret.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

Environment = Literal["test", "prod"]
SslMode = Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]


class TenantTLS(BaseModel):
    """How the tenants' pods reach the server over TLS."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    mode: SslMode | None = None  # None: the admin DSN's sslmode, if it has one
    root_cert: str | None = Field(None, alias="rootCert", pattern=r"-----BEGIN CERTIFICATE-----")


class Instance(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    name: str = Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
    environment: Environment
    admin_dsn: SecretStr = Field(alias="adminDsn")
    tenant_host: str | None = Field(None, alias="tenantHost")
    tls: TenantTLS = TenantTLS()
    # Tenants the instance takes at most; new ones go to other instances of the environment, or
    # wait. Each tenant is a schema of ~39 relations: see docs/benchmarks.md for what 10,000 cost.
    max_tenants: int | None = Field(None, alias="maxTenants", ge=1)


class EnvironmentPolicy(BaseModel):
    """Which environments the MemoryTenants of a namespace may ask for. The chart enforces the same
    at the API server with a ValidatingAdmissionPolicy; the operator checks it again, so a tenant
    created while the policy was absent, or changed since, is refused before anything is made."""

    model_config = ConfigDict(frozen=True)

    namespaces: dict[str, list[Environment]] = {}
    default: list[Environment] = []  # for the namespaces not named

    def allowed(self, namespace: str) -> list[Environment]:
        return self.namespaces.get(namespace, self.default)


class LeaderElection(BaseModel):
    """One operator acts at a time (leadership.py): the others wait for its Lease."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    enabled: bool = True
    namespace: str | None = None  # None: the pod's own namespace ($POD_NAMESPACE), else "default"
    name: str = "engram-operator"
    lease_duration_seconds: float = Field(15, gt=0, alias="leaseDurationSeconds")
    renew_deadline_seconds: float = Field(10, gt=0, alias="renewDeadlineSeconds")
    retry_period_seconds: float = Field(2, gt=0, alias="retryPeriodSeconds")

    @model_validator(mode="after")
    def _stops_before_others_take_over(self) -> LeaderElection:
        if not self.retry_period_seconds < self.renew_deadline_seconds < self.lease_duration_seconds:
            raise ValueError("leaderElection: retryPeriodSeconds < renewDeadlineSeconds < leaseDurationSeconds")
        return self

    def lease_namespace(self) -> str:
        return self.namespace or os.environ.get("POD_NAMESPACE") or "default"


class OperatorConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    image: str = "engram:0.1.0"
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent", alias="imagePullPolicy")
    # Secrets (in each tenant's namespace) the kubelet pulls the tenants' image with.
    image_pull_secrets: list[str] = Field([], alias="imagePullSecrets")
    instances: list[Instance] = Field(min_length=1)
    public_url_template: str = Field("http://{service}.{namespace}.svc:8080", alias="publicUrlTemplate")
    drift_interval_seconds: float = Field(60, gt=0, alias="driftIntervalSeconds")
    environment_policy: EnvironmentPolicy | None = Field(None, alias="environmentPolicy")  # None: no restriction
    # Names this cluster in the claims its tenants hold in the databases. None: the uid of the
    # cluster's kube-system namespace, unique per cluster and stable for its life.
    cluster_id: str | None = Field(None, alias="clusterId", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
    leader_election: LeaderElection = Field(LeaderElection(), alias="leaderElection")
    # How many tenants' pods roll at once when their template changes (a new image): rollouts.py.
    max_concurrent_rollouts: int = Field(5, ge=1, alias="maxConcurrentRollouts")
    # Annotations a tenant's spec may put on its Ingress: the ones an ingress controller reads can
    # run configuration with the controller's rights (nginx's snippets), so only these prefixes.
    ingress_annotation_prefixes: list[str] = Field(
        ["cert-manager.io/", "external-dns.alpha.kubernetes.io/"], alias="ingressAnnotationPrefixes"
    )

    @model_validator(mode="after")
    def _unique_names(self) -> OperatorConfig:
        names = [i.name for i in self.instances]
        if len(names) != len(set(names)):
            raise ValueError(f"database instance names must be unique: {names}")
        return self

    @classmethod
    def load(cls, path: Path | None = None) -> OperatorConfig:
        """Read the file; an instance's admin DSN comes from the variable its ``adminDsnEnv`` names."""
        if path is None:
            if "ENGRAM_OPERATOR_CONFIG" not in os.environ:
                raise ValueError("set ENGRAM_OPERATOR_CONFIG to the operator's configuration file")
            path = Path(os.environ["ENGRAM_OPERATOR_CONFIG"])
        raw = yaml.safe_load(path.read_text()) or {}
        for instance in raw.get("instances", []):
            _from_env(instance, "adminDsnEnv", "adminDsn", instance.get("name"))
            if isinstance(instance.get("tls"), dict):
                _from_env(instance["tls"], "rootCertEnv", "rootCert", instance.get("name"))
        return cls.model_validate(raw)


def _from_env(section: dict, variable_key: str, key: str, instance: object) -> None:
    """``section[key]`` from the environment variable ``section[variable_key]`` names, if it names one."""
    env_name = section.pop(variable_key, None)
    if env_name is None:
        return
    if env_name not in os.environ:
        raise ValueError(f"instance {instance!r}: the variable {env_name} is not set")
    section[key] = os.environ[env_name]
