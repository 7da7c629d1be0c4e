"""Tenants as the admin API shows them: created, listed, re-keyed and deleted over REST."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engram.domain.tenancy import validate_tenant_name
from engram.errors import InvalidInput

# A rotation's overlap: the old keys keep working this long at most (a week), so agents move over.
MAX_OVERLAP_SECONDS = 7 * 24 * 3600


class TenantSummary(BaseModel):
    name: str
    schema_name: str = Field(description="the PostgreSQL schema holding its memories")
    created_at: datetime
    managed_by: str | None = Field(
        None, description="the MemoryTenant (`k8s:<cluster>/<namespace>/<name>`) that owns it; null: made over the API"
    )


class TenantList(BaseModel):
    tenants: list[TenantSummary] = Field(description="by name")


class NewTenant(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="1-40 lower-case letters, digits and '-' (a Kubernetes object name)")
    environment: Literal["test", "prod"] = Field(
        description="the environment the tenant is for: refused unless this service's database serves it"
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        try:
            return validate_tenant_name(name)
        except InvalidInput as exc:  # raised again as pydantic's, which names the field
            raise ValueError(str(exc)) from None


class TenantCreated(BaseModel):
    tenant: str
    schema_name: str
    environment: str
    api_key: str = Field(description="shown once")
    mcp_url: str
    rest_url: str


class KeyRotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    overlap_seconds: float = Field(
        0, ge=0, le=MAX_OVERLAP_SECONDS, description="how long the old keys keep working (0: they stop now)"
    )


class RotatedKey(BaseModel):
    tenant: str
    api_key: str = Field(description="shown once; keys bound to the tenant's users are left as they are")
    old_keys_valid_until: datetime
