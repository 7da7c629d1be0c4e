"""The end users of a tenant: listed from the memories they own, and given keys of their own."""

from __future__ import annotations

import asyncpg

from engram.domain.tenancy import TenantContext
from engram.domain.users import UserKey, UserPage, UserSummary
from engram.errors import Forbidden, InvalidInput
from engram.services.tenants import TenantService
from engram.store import memories as repo

MAX_PAGE = 1000


class UserService:
    def __init__(self, pool: asyncpg.Pool, tenants: TenantService) -> None:
        self._pool = pool
        self._tenants = tenants

    async def list(self, ctx: TenantContext, prefix: str = "", after: str = "", limit: int = 100) -> UserPage:
        """The tenant's users by id, with their counts; a context acting for one user sees that one."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}", field="limit")
        if ctx.user is not None:  # the first id from this prefix on is the user's, if they own any memory
            async with self._pool.acquire() as conn:
                rows = await repo.users(conn, ctx.schema, ctx.user, "", 1)
            return UserPage(users=[UserSummary(**dict(r)) for r in rows if r["user_id"] == ctx.user])
        async with self._pool.acquire() as conn:
            rows = await repo.users(conn, ctx.schema, prefix, after, limit + 1)
        users = [UserSummary(**dict(r)) for r in rows[:limit]]
        return UserPage(users=users, next_cursor=users[-1].user_id if len(rows) > limit else None)

    async def key(self, ctx: TenantContext, user_id: str) -> UserKey:
        """A new key bound to the user (the tenant's key only issues one)."""
        _tenant_only(ctx, "issue a user's key")
        return UserKey(user_id=user_id, api_key=await self._tenants.user_key(ctx.name, user_id))

    async def revoke_keys(self, ctx: TenantContext, user_id: str) -> int:
        _tenant_only(ctx, "revoke a user's keys")
        return await self._tenants.revoke_user_keys(ctx.name, user_id)


def _tenant_only(ctx: TenantContext, what: str) -> None:
    if ctx.user is not None:
        raise Forbidden(f"a key acting for user {ctx.user!r} cannot {what}: use the tenant's key", field="user_id")
