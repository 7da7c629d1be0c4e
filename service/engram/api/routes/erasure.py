"""REST: erasure for good and at once, with a receipt: one user, or the memories a filter or a
query selects (a whole tenant is the admin API's)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from engram.api.deps import ActingDep, EngramDep, TenantDep, known_query
from engram.api.errors import ERROR_RESPONSES
from engram.api.routes.users import UserPath
from engram.domain.erasure import ErasureReceipt
from engram.services.erasure import ErasureRequest

router = APIRouter(
    prefix="/t/{tenant}/v1", tags=["erasure"], responses=ERROR_RESPONSES, dependencies=[Depends(known_query)]
)


@router.delete("/users/{user_id}")
async def erase_user(user_id: UserPath, ctx: TenantDep, engram: EngramDep) -> ErasureReceipt:
    """Erase everything of this user now (not at the next purge): memories of any status, what was
    derived from theirs, their history, keys and cached queries. Irreversible; the receipt
    counts what went per table and checks that nothing of theirs remains. Idempotent: run it again
    after a crash or an unreachable cache, it completes the rest. Needs the tenant's key."""
    return await engram.erasure.user(ctx, user_id)


@router.post("/erase")
async def erase_selection(request: ErasureRequest, ctx: ActingDep, engram: EngramDep) -> ErasureReceipt:
    """Erase now the memories a filter selects (a tag, a session, a type...; every status unless
    the filter names some) or a query's hits (within the filter), and what was derived from
    them: their rows, history, and the tenant's cached queries. Irreversible (`dry_run` first
    says what would go); a user's key erases that user's own memories only."""
    return await engram.erasure.selection(ctx, request)
