"""Request-scoped dependencies: the process's Engram and the authenticated tenant."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from engram.runtime import Engram
from engram.store.schema import TenantContext

_bearer = HTTPBearer(auto_error=False, description="the tenant's API key")


def get_engram(request: Request) -> Engram:
    return request.app.state.engram


async def authenticated_tenant(
    tenant: Annotated[str, Path(description="tenant name")],
    engram: Annotated[Engram, Depends(get_engram)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TenantContext:
    return await engram.tenants.authenticate(tenant, credentials.credentials if credentials else None)


EngramDep = Annotated[Engram, Depends(get_engram)]
TenantDep = Annotated[TenantContext, Depends(authenticated_tenant)]
