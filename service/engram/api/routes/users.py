"""REST: the end users of a tenant (they appear with their first memory) and their keys; erasing
one is in routes/erasure.py."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, status

from engram.api.deps import ActingDep, EngramDep, TenantDep, known_query
from engram.api.errors import ERROR_RESPONSES
from engram.domain.boundary import UserId
from engram.domain.users import KeysRevoked, UserKey, UserPage

router = APIRouter(
    prefix="/t/{tenant}/v1", tags=["users"], responses=ERROR_RESPONSES, dependencies=[Depends(known_query)]
)
UserPath = Annotated[UserId, Path(description="the end user's id")]


@router.get("/users")
async def list_users(
    ctx: ActingDep,
    engram: EngramDep,
    prefix: Annotated[str, Query(max_length=128, description="ids starting with this")] = "",
    after: Annotated[str, Query(max_length=128, description="next_cursor of the previous page")] = "",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> UserPage:
    """The users owning memories, by id, with their counts (a user's key sees its own user only)."""
    return await engram.users.list(ctx, prefix, after, limit)


@router.post("/users/{user_id}/keys", status_code=status.HTTP_201_CREATED)
async def issue_user_key(user_id: UserPath, ctx: TenantDep, engram: EngramDep) -> UserKey:
    """A new API key bound to this user: through REST, MCP and the CLI it reaches that user's
    memories and reads the tenant's shared ones, nothing else. Needs the tenant's key."""
    return await engram.users.key(ctx, user_id)


@router.delete("/users/{user_id}/keys")
async def revoke_user_keys(user_id: UserPath, ctx: TenantDep, engram: EngramDep) -> KeysRevoked:
    """Revoke every key bound to this user, at once on this replica (within seconds on others)."""
    return KeysRevoked(revoked=await engram.users.revoke_keys(ctx, user_id))
