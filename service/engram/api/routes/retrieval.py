"""REST: the second vector channel of a tenant (the retrieval model's vectors): its state, its lag
behind the writes, and the tenant's choice to have it or not."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from engram.api.deps import EngramDep, TenantDep, known_query
from engram.api.errors import ERROR_RESPONSES
from engram.domain.embedders import RetrievalChoice, RetrievalStatus

router = APIRouter(
    prefix="/t/{tenant}/v1", tags=["search"], responses=ERROR_RESPONSES, dependencies=[Depends(known_query)]
)


@router.get("/retrieval")
async def retrieval_status(ctx: TenantDep, engram: EngramDep) -> RetrievalStatus:
    """Whether the tenant's searches use the second vector channel, and how many memories still
    wait for their second vector (they are found by the other channels meanwhile)."""
    return await engram.retrieval.status(ctx)


@router.put("/retrieval")
async def choose_retrieval(choice: RetrievalChoice, ctx: TenantDep, engram: EngramDep) -> RetrievalStatus:
    """Turn the channel on (`{"enabled": true}`) or off for this tenant, or follow the service's
    default again (`{"enabled": null}`). Off, no new second vectors are made and searches do not
    use them; those made are kept. Needs the tenant's key."""
    return await engram.retrieval.choose(ctx, choice)
