"""Erasure for good and at once (not at the next purge): of a user, of the memories a filter or a
query selects, of a whole tenant. Each hands back a receipt: what went, counted per table, and a
check made afterwards that nothing of it remains."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg
from pydantic import BaseModel, ConfigDict, Field

from engram.cache import Cache
from engram.domain.boundary import Count, Flag, Text
from engram.domain.erasure import ErasureReceipt
from engram.domain.models import MemoryFilter, Status
from engram.domain.search import SearchRequest
from engram.domain.tenancy import TenantContext, schema_name, validate_tenant_name
from engram.errors import Conflict, Forbidden, InvalidInput, NotFound
from engram.services.search import SearchService, query_cache_prefix, tenant_cache_prefix
from engram.services.tenants import TenantService
from engram.services.writes import WriteService
from engram.store import control, erasure

CACHE_OUT_OF_REACH = "the shared cache was out of reach: its entries expire by their TTL; run the erasure again"


class ErasureRequest(BaseModel):
    """Which memories to erase: those a filter selects (of any status unless it names some), or
    the hits of a query (within the filter, if one is given)."""

    model_config = ConfigDict(extra="forbid")

    filter: MemoryFilter | None = Field(
        None,
        description="erase the memories it selects, of every status unless it names some; with a user_id, "
        "that user's own (never the tenant's shared ones)",
    )
    query: Text | None = Field(None, min_length=1, max_length=4000, description="erase the hits of this search")
    top_k: Count | None = Field(None, description="with query: how many hits (default 5, capped by the server)")
    dry_run: Flag = Field(False, description="say what would be erased, erase nothing")

    def description(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, exclude={"dry_run"}, exclude_defaults=True)


class ErasureService:
    def __init__(
        self, pool: asyncpg.Pool, tenants: TenantService, writes: WriteService, search: SearchService, cache: Cache
    ) -> None:
        self._pool = pool
        self._tenants = tenants
        self._writes = writes
        self._search = search
        self._cache = cache

    async def user(self, ctx: TenantContext, user_id: str) -> ErasureReceipt:
        """Everything of one user: their memories (any status) and what was derived from them,
        every history event of them, their keys, their cached query vectors; ids and hashes are
        kept so no import brings them back. One transaction for the tables (a crash leaves all
        or nothing), the cache after it: run again, it completes what is left and removes nothing
        twice. Needs the tenant's key."""
        _tenant_only(ctx, "erase a user")
        async with self._writes.turn(ctx.schema) as (conn, _):
            ids = await erasure.owned_ids(conn, ctx.schema, user_id)
            texts = await erasure.texts_of(conn, ctx.schema, ids)
            removed = await erasure.erase(conn, ctx.schema, ids)
        removed["api_keys"] = await self._tenants.revoke_user_keys(ctx.name, user_id)
        cached = await self._cache.drop_prefix(query_cache_prefix(ctx.name, user_id))
        removed["query_cache"] = cached or 0
        left = await self._check(ctx, ids, texts, user_id)
        return _receipt(ctx.name, removed, left, cached is not None, user_id=user_id)

    async def selection(self, ctx: TenantContext, request: ErasureRequest) -> ErasureReceipt:
        """The memories a filter selects or a query's hits, and what was derived from them; a
        user's key erases that user's own only. The tenant's cached query vectors go too (a
        query may have been the erased words)."""
        if request.filter is None and request.query is None:
            raise InvalidInput("say what to erase: a filter, a query, or both", field="filter")
        if request.top_k is not None and request.query is None:
            raise InvalidInput("top_k counts a query's hits: give a query", field="top_k")
        chosen = _every_status(request.filter) if request.filter is not None else None
        if chosen is not None and (ctx.user is not None or chosen.user_id is not None):
            # A user's erasure reaches their own memories only, never the tenant's shared ones.
            chosen = chosen.model_copy(update={"own_only": True})
        hits = await self._hits(ctx, request, chosen)
        if chosen is not None:
            chosen = ctx.scoped(chosen)
        if request.dry_run:
            async with self._pool.acquire() as conn:
                ids = await erasure.selected_ids(conn, ctx.schema, chosen if request.query is None else None, hits)
            return _receipt(
                ctx.name, {"memories": len(ids)}, {}, False, selection=request.description(), ids=ids, dry_run=True
            )
        async with self._writes.turn(ctx.schema) as (conn, _):
            ids = await erasure.selected_ids(conn, ctx.schema, chosen if request.query is None else None, hits)
            texts = await erasure.texts_of(conn, ctx.schema, ids)
            removed = await erasure.erase(conn, ctx.schema, ids)
        cached = await self._cache.drop_prefix(tenant_cache_prefix(ctx.name))
        removed["query_cache"] = cached or 0
        left = await self._check(ctx, ids, texts, None)
        return _receipt(ctx.name, removed, left, cached is not None, selection=request.description(), ids=ids)

    async def tenant(self, name: str) -> ErasureReceipt:
        """A whole tenant: its schema (memories, history, keys, tombstones) and its cached query
        vectors; its name is remembered as erased, nothing else. One tenant made by the operator is
        refused: deleting its MemoryTenant removes it. Asked again, the receipt tells when it went
        and retries the cache."""
        validate_tenant_name(name)
        schema = schema_name(name)
        async with self._pool.acquire() as conn, conn.transaction():
            registered, holder = await control.tenant_claim(conn, name)
            if registered and holder is not None:
                raise Conflict(
                    f"tenant {name!r} is managed by {holder}: delete that MemoryTenant and the operator removes it"
                )
            if not registered and await control.tenant_erased_at(conn, name) is None:
                raise NotFound(f"tenant {name!r} not found")
            removed = await erasure.schema_rows(conn, schema) if registered else {}
            if registered:
                await control.drop_tenant(conn, name, f'"{schema}"')
                await control.record_erased_tenant(conn, name)
        self._tenants.forget(name)
        cached = await self._cache.drop_prefix(tenant_cache_prefix(name))
        removed["query_cache"] = cached or 0
        async with self._pool.acquire() as conn:
            left = {
                "schema": int(await erasure.schema_exists(conn, schema)),
                "registration": int((await control.tenant_claim(conn, name))[0]),
            }
            erased_at = await control.tenant_erased_at(conn, name)
        notes = [] if registered else [f"erased before, at {erased_at:%Y-%m-%d %H:%M:%S} UTC"] if erased_at else []
        return _receipt(name, removed, left, cached is not None, notes=notes)

    async def _hits(self, ctx: TenantContext, request: ErasureRequest, chosen: MemoryFilter | None) -> list[UUID]:
        if request.query is None:
            return []
        narrowed = chosen if chosen is not None else MemoryFilter(own_only=ctx.user is not None)
        found = await self._search.search(
            ctx, SearchRequest(query=request.query, top_k=request.top_k, filter=_active(narrowed))
        )
        return [hit.memory.id for hit in found.hits]

    async def _check(self, ctx: TenantContext, ids: list[UUID], texts: list[str], user: str | None) -> dict[str, int]:
        async with self._pool.acquire() as conn:
            await conn.execute(f"ANALYZE {ctx.schema}.memories")  # the planner's token statistics too
            return await erasure.remaining(conn, ctx.schema, ids, texts, user)


def _every_status(f: MemoryFilter) -> MemoryFilter:
    """An erasure's filter reaches memories of any status unless it names some."""
    return f if "statuses" in f.model_fields_set else f.model_copy(update={"statuses": list(Status)})


def _active(f: MemoryFilter) -> MemoryFilter:
    """A search finds active memories only."""
    return f.model_copy(update={"statuses": [Status.active]})


def _receipt(
    tenant: str,
    removed: dict[str, int],
    left: dict[str, int],
    cache_reached: bool,
    *,
    user_id: str | None = None,
    selection: dict[str, Any] | None = None,
    ids: list[UUID] | None = None,
    notes: list[str] | None = None,
    dry_run: bool = False,
) -> ErasureReceipt:
    notes = list(notes or [])
    if not cache_reached and not dry_run:
        notes.append(CACHE_OUT_OF_REACH)
    return ErasureReceipt(
        tenant=tenant,
        user_id=user_id,
        selection=selection,
        memory_ids=ids,
        erased_at=datetime.now(UTC),
        removed=removed,
        remaining=left,
        complete=not dry_run and cache_reached and not any(left.values()),
        dry_run=dry_run,
        notes=notes,
    )


def _tenant_only(ctx: TenantContext, what: str) -> None:
    if ctx.user is not None:
        raise Forbidden(f"a key acting for user {ctx.user!r} cannot {what}: use the tenant's key", field="user_id")
