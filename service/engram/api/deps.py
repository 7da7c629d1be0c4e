"""Request-scoped dependencies: the process's Engram, the authenticated tenant, and the query
parameters a route knows."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from engram.domain.boundary import UserId
from engram.domain.tenancy import TenantContext
from engram.errors import InvalidInput
from engram.runtime import Engram

_bearer = HTTPBearer(auto_error=False, description="the tenant's API key")


async def get_engram(request: Request) -> Engram:
    """Async, as every dependency is: FastAPI runs a plain function in a worker thread, a thread hop
    per request (tests/unit/test_async_dependencies.py)."""
    return request.app.state.engram


async def authenticated_tenant(
    tenant: Annotated[str, Path(description="tenant name")],
    engram: Annotated[Engram, Depends(get_engram)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TenantContext:
    return await engram.tenants.authenticate(tenant, credentials.credentials if credentials else None)


async def acting_tenant(
    ctx: Annotated[TenantContext, Depends(authenticated_tenant)],
    user_id: Annotated[
        UserId | None,
        Query(description="act for this end user of the tenant: their memories and the tenant's shared ones"),
    ] = None,
) -> TenantContext:
    """The tenant, acting for the user the request names (a key bound to a user acts for that one)."""
    return ctx.pinned_to(user_id)


def declared_query(route: APIRoute) -> frozenset[str]:
    """The query parameters of a route and of every dependency it has."""
    names: set[str] = set()
    dependants = [route.dependant]
    while dependants:
        dependant = dependants.pop()
        names.update(param.alias for param in dependant.query_params)
        dependants.extend(dependant.dependencies)
    return frozenset(names)


async def known_query(request: Request) -> None:
    """A query parameter the route does not take is refused, as an unknown body field is: ignored,
    a typo ("?dryrun=true") would run the real job. The name goes in field only."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = declared_query(route)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "none"
        raise InvalidInput(f"unknown query parameter (this route takes: {takes})", field=unknown[0])


EngramDep = Annotated[Engram, Depends(get_engram)]
TenantDep = Annotated[TenantContext, Depends(authenticated_tenant)]
ActingDep = Annotated[TenantContext, Depends(acting_tenant)]
