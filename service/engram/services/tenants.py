"""Tenants: create (schema + migrations + key), list, rotate keys, authenticate, resolve."""

from __future__ import annotations

import builtins  # `list` is also a method here
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import datetime

import asyncpg

from engram.domain.embedders import retrieval_channel
from engram.domain.tenancy import TenantContext, hash_key, key_tenant, new_key, schema_name, validate_tenant_name
from engram.errors import Conflict, Forbidden, NotFound, Unauthorized
from engram.store import control, dumps, tenant_meta
from engram.store import memories as memories_store
from engram.store.migrate import close_after_migrations, migrate_schema

log = logging.getLogger(__name__)

# A valid key is remembered this long per process: rotation takes effect within this time everywhere.
_AUTH_CACHE_SECONDS = 5.0
# A tenant's context (its embedding model) is re-read this often: `engram reindex` may change it.
_CONTEXT_SECONDS = 5.0


@dataclass(frozen=True)
class TenantInfo:
    name: str
    schema: str
    created_at: datetime
    managed_by: str | None = None  # the MemoryTenant that owns it (k8s:<cluster>/<namespace>/<name>)


class TenantService:
    def __init__(
        self,
        pool: asyncpg.Pool,
        embedding_model: str,
        embedding_dim: int,
        only: str | None = None,
        retrieval: bool = False,
    ):
        self._pool = pool
        self._retrieval = retrieval  # the service's default for the second vector channel
        self._model = embedding_model
        self._dim = embedding_dim
        self._only = only
        self._contexts: dict[str, tuple[float, TenantContext]] = {}
        self._valid_keys: dict[str, tuple[float, str | None]] = {}  # digest -> (until, bound user)

    async def create(self, name: str, environment: str | None = None) -> tuple[TenantContext, str]:
        """Create a tenant with its own schema; returns it and its first API key (shown once).
        ``environment`` (the admin API always names one) must be the one the database serves, as
        the operator checks it: a test tenant never lands in a production database."""
        validate_tenant_name(name)
        if self._only is not None:
            raise Conflict(f"this service serves tenant {self._only!r} only: create tenants on a shared service")
        context = replace(
            TenantContext.for_tenant(name, self._model, self._dim),
            retrieval=retrieval_channel(self._model, None, self._retrieval),
        )
        key = new_key(name)
        async with self._pool.acquire() as conn:
            try:
                async with conn.transaction():
                    label = await control.read_environment(conn)
                    if environment is not None and label != environment:
                        raise Conflict(
                            f"this service's database serves {label or 'no labelled'} environment, "
                            f"not {environment}: refusing to create the tenant here",
                            field="environment",
                        )
                    await control.forget_erased_tenant(conn, name)
                    if not await control.register_tenant(conn, name, schema_name(name)):
                        raise Conflict(f"tenant {name!r} already exists")
                    if await tenant_meta.read_meta(conn, context.schema) is not None:
                        # Never silently adopt a schema someone else made.
                        raise Conflict(f"schema {schema_name(name)} already exists but is not a registered tenant")
                    await migrate_schema(conn, context.schema, "tenant", self._dim)
                    await tenant_meta.write_meta(conn, context.schema, name, self._model, self._dim)
                    await tenant_meta.add_key(conn, context.schema, hash_key(key))
            finally:
                await close_after_migrations(conn)
        self._contexts[name] = (time.monotonic() + _CONTEXT_SECONDS, context)
        return context, key

    async def list(self) -> list[TenantInfo]:
        async with self._pool.acquire() as conn:
            rows = await control.list_tenants(conn)
        return [TenantInfo(r["name"], r["schema_name"], r["created_at"], r["claimed_by"]) for r in rows]

    async def rotate_key(self, name: str, overlap_seconds: float = 0.0) -> str:
        """Issue a new key; the tenant's keys before it stop working after ``overlap_seconds`` (at
        once for 0), so agents can move over. Keys bound to its users stay."""
        context = await self.resolve(name)
        key = new_key(name)
        async with self._pool.acquire() as conn, conn.transaction():
            await tenant_meta.retire_keys(conn, context.schema, overlap_seconds)
            await tenant_meta.add_key(conn, context.schema, hash_key(key))
        self._valid_keys.clear()
        return key

    def forget(self, name: str) -> None:
        """Drop what this process remembers of a tenant that is gone (its context, valid keys)."""
        self._contexts.pop(name, None)
        self._valid_keys.clear()

    async def user_key(self, name: str, user_id: str) -> str:
        """A new key bound to one user of the tenant: it reaches that user's memories (and reads
        the tenant's shared ones) only. Shown once."""
        context = await self.resolve(name)
        key = new_key(name)
        async with self._pool.acquire() as conn:
            await tenant_meta.add_key(conn, context.schema, hash_key(key), user_id)
        return key

    async def revoke_user_keys(self, name: str, user_id: str) -> int:
        context = await self.resolve(name)
        async with self._pool.acquire() as conn:
            revoked = await tenant_meta.revoke_user_keys(conn, context.schema, user_id)
        self._valid_keys.clear()
        return revoked

    async def restore(self, name: str, data: AsyncIterator[str]) -> dict[str, int]:
        """Load another tenant's memories and their history (a backup's data, store/dumps.py) into
        this one, which must hold none: in one transaction, under the tenant's write lock."""
        context = await self.resolve(name)
        async with self._pool.acquire() as conn, conn.transaction():
            await memories_store.lock_writes(conn, context.schema)
            if await conn.fetchval(f"SELECT EXISTS (SELECT 1 FROM {context.schema}.memories)"):
                raise Conflict(f"tenant {name!r} already holds memories: restore into a new, empty tenant")
            model = (context.embedding_model, context.embedding_dim)
            return await dumps.load(conn, schema_name(name), data, model)

    async def drop(self, name: str) -> None:
        """Remove a tenant and all its memories for good (throwaway tenants of `engram eval`)."""
        context = await self.resolve(name)
        async with self._pool.acquire() as conn, conn.transaction():
            if not await control.drop_tenant(conn, name, context.schema):
                raise NotFound(f"tenant {name!r} not found")
        self.forget(name)

    async def migrate_all(self) -> dict[str, builtins.list[int]]:
        applied = {}
        for info in await self.list():
            context = await self.resolve(info.name)
            async with self._pool.acquire() as conn:
                applied[info.name] = await migrate_schema(conn, context.schema, "tenant", context.embedding_dim)
                if applied[info.name]:
                    await close_after_migrations(conn)
        return applied

    async def resolve(self, name: str) -> TenantContext:
        """The tenant's context; a missing tenant is an error, never a fallback."""
        cached = self._contexts.get(name)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        validate_tenant_name(name)
        if self._only is not None and name != self._only:
            raise NotFound(f"tenant {name!r} is not served here")
        schema = f'"{schema_name(name)}"'
        async with self._pool.acquire() as conn:
            meta = await tenant_meta.read_meta(conn, schema)
        if meta is None:
            raise NotFound(f"tenant {name!r} not found")
        model = meta["embedding_model"]
        retrieval = retrieval_channel(model, meta.get("retrieval_channel"), self._retrieval)
        context = TenantContext(name, schema, model, meta["embedding_dim"], retrieval=retrieval)
        self._contexts[name] = (time.monotonic() + _CONTEXT_SECONDS, context)
        return context

    async def check_all(self) -> None:
        """Start-up check: say which tenants keep another model than the configured one (each is
        served with its own model, loaded on demand; one tenant never stops the process)."""
        names = [self._only] if self._only else [t.name for t in await self.list()]
        for name in names:
            try:
                context = await self.resolve(name)
            except NotFound:
                continue  # dropped meanwhile
            if context.embedding_model != self._model:
                log.info(
                    "tenant %s keeps its vectors of %s (new tenants get %s; `engram reindex` moves one)",
                    name,
                    context.embedding_model,
                    self._model,
                )

    async def authenticate(self, name: str, key: str | None) -> TenantContext:
        """401 without a valid key (for a tenant that does not exist too); 403 for a valid key of
        another tenant."""
        if not key:
            raise Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        owner = key_tenant(key)
        if owner is None:
            raise Unauthorized("malformed API key")
        if owner != name:
            if await self._key_valid(owner, key):
                raise Forbidden(f"this API key does not grant access to tenant {name!r}")
            raise Unauthorized("invalid API key")
        try:
            context = await self.resolve(name)
        except NotFound:  # a tenant that does not exist looks like a wrong key: names are not told
            raise Unauthorized("invalid API key") from None
        valid, user = await self._key_holder(name, key)
        if not valid:
            raise Unauthorized("invalid API key")
        return context if user is None else replace(context, user=user)

    async def _key_valid(self, name: str, key: str) -> bool:
        return (await self._key_holder(name, key))[0]

    async def _key_holder(self, name: str, key: str) -> tuple[bool, str | None]:
        """(valid, the user a valid key is bound to)."""
        digest = hash_key(key)
        cached = self._valid_keys.get(digest)
        if cached is not None and cached[0] > time.monotonic():
            return True, cached[1]
        try:
            context = await self.resolve(name)
        except NotFound:
            return False, None
        async with self._pool.acquire() as conn:
            valid, user = await tenant_meta.key_holder(conn, context.schema, digest)
        if valid:
            self._valid_keys[digest] = (time.monotonic() + _AUTH_CACHE_SECONDS, user)
        return valid, user
