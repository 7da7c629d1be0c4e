"""Tenants: their names, the schema each lives in, their API keys, and the context every request
carries. Pure, so every face, the services and the operator share one definition."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, replace

from engram.domain.models import Memory, MemoryFilter
from engram.errors import Forbidden, InvalidInput

# A Kubernetes object name (DNS-1123 label), so a MemoryTenant's name is a valid tenant name.
_TENANT_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$")
KEY_PREFIX = "ek"
# What a client told "no" should do: said wherever a key is missing or refused, and to OAuth seekers.
KEY_HINT = "send the tenant's engram API key as 'Authorization: Bearer <key>' (engram takes API keys, not OAuth)"


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
    # The end user the request is pinned to (by a key bound to that user, or a per-user MCP URL):
    # it reaches that user's memories and reads the tenant's shared ones, nothing else.
    user: str | None = None
    # Whether its memories get a second vector of the retrieval model (domain/embedders.py).
    retrieval: bool = False

    def pinned_to(self, user: str | None) -> TenantContext:
        """This context acting for ``user`` (a per-user URL, a request's user_id); one pinned to
        another user refuses (403). None leaves it as it is."""
        return self if user is None else replace(self, user=self.user_for(user))

    def user_for(self, asked: str | None) -> str | None:
        """The user an operation acts for: the one it asks for, or the pinned one; a pinned
        context asking for another user is refused (403)."""
        if self.user is None or asked in (None, self.user):
            return asked if self.user is None else self.user
        raise Forbidden(
            f"this key or URL acts for user {self.user!r} only; it cannot reach user {asked!r}", field="user_id"
        )

    def scoped(self, f: MemoryFilter) -> MemoryFilter:
        """The filter as this context may apply it: its user the pinned one, if any."""
        user = self.user_for(f.user_id)
        return f if user == f.user_id else f.model_copy(update={"user_id": user})

    def may_read(self, memory: Memory) -> bool:
        """Whether this context sees the memory: any, acting for the whole tenant; else the
        user's own and the tenant's shared ones."""
        return self.user is None or memory.user_id in (None, self.user)

    def may_change(self, memory: Memory) -> bool:
        """Whether it may change it: a user changes only their own memories."""
        return self.user is None or memory.user_id == self.user

    @classmethod
    def for_tenant(cls, name: str, embedding_model: str, embedding_dim: int) -> TenantContext:
        return cls(name, f'"{schema_name(name)}"', embedding_model, embedding_dim)


def hash_key(key: str) -> str:
    # Keys are 256-bit random, so a fast hash is enough (no dictionary to guard against).
    return hashlib.sha256(key.encode()).hexdigest()


def new_key(tenant: str) -> str:
    return f"{KEY_PREFIX}.{tenant}.{secrets.token_urlsafe(32)}"


def key_tenant(key: str) -> str | None:
    """The tenant a key names (``ek.<tenant>.<secret>``), or None for anything else."""
    parts = key.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else None
