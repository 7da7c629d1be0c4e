"""Tenant names and the PostgreSQL schema each one lives in."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.errors import InvalidInput

# A Kubernetes object name (DNS-1123 label), so a MemoryTenant's name is a valid tenant name.
_TENANT_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$")
CONTROL_SCHEMA = '"engram_control"'


def validate_tenant_name(name: str) -> str:
    if not _TENANT_NAME.match(name):
        raise InvalidInput(
            f"invalid tenant name {name!r}: use 1-40 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return name


def schema_name(tenant: str) -> str:
    """The unquoted schema name of a tenant (``tenant_<name>``, '-' becomes '_')."""
    return "tenant_" + validate_tenant_name(tenant).replace("-", "_")


@dataclass(frozen=True)
class TenantContext:
    """Who a request acts for; everything below the interfaces takes it as an argument."""

    name: str
    schema: str  # quoted identifier, safe to interpolate into SQL
    embedding_model: str
    embedding_dim: int

    @classmethod
    def for_tenant(cls, name: str, embedding_model: str, embedding_dim: int) -> TenantContext:
        return cls(name, f'"{schema_name(name)}"', embedding_model, embedding_dim)
