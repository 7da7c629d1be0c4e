"""The operator's configuration: which database instances exist and which environment each serves.

Read from a YAML file (a ConfigMap in the Helm chart) named by ENGRAM_OPERATOR_CONFIG:

    image: engram:0.1.0
    imagePullPolicy: IfNotPresent
    driftIntervalSeconds: 60            # how often children and schemas are re-checked and repaired
    publicUrlTemplate: "http://{service}.{namespace}.svc:8080"   # base of each tenant's MCP URL
    instances:
      - name: pg-test
        environment: test
        adminDsnEnv: PG_TEST_ADMIN_DSN     # the admin DSN comes from this env var (a Secret)
        tenantHost: pg-test.databases.svc  # host:port the tenants' pods use (default: the DSN's)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator


class Instance(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    name: str = Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
    environment: Literal["test", "prod"]
    admin_dsn: SecretStr = Field(alias="adminDsn")
    tenant_host: str | None = Field(None, alias="tenantHost")


class OperatorConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    image: str = "engram:0.1.0"
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent", alias="imagePullPolicy")
    instances: list[Instance] = Field(min_length=1)
    public_url_template: str = Field("http://{service}.{namespace}.svc:8080", alias="publicUrlTemplate")
    drift_interval_seconds: float = Field(60, gt=0, alias="driftIntervalSeconds")

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
            env_name = instance.pop("adminDsnEnv", None)
            if env_name is not None:
                if env_name not in os.environ:
                    raise ValueError(f"instance {instance.get('name')!r}: the variable {env_name} is not set")
                instance["adminDsn"] = os.environ[env_name]
        return cls.model_validate(raw)
