"""Request-scoped dependencies: the process's Engram, the authenticated tenant, and the query
parameters a route knows."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from engram.api.admission import CONTEXT
from engram.domain.boundary import UserId
from engram.domain.tenancy import TenantContext, key_tenant
from engram.errors import Forbidden, InvalidInput, Unauthorized
from engram.runtime import Engram

_bearer = HTTPBearer(auto_error=False, description="the tenant's API key")


async def get_engram(request: Request) -> Engram:
    """Async, as every dependency is: FastAPI runs a plain function in a worker thread, a thread hop
    per request (tests/unit/test_async_dependencies.py)."""
    return request.app.state.engram


async def authenticated_tenant(
    request: Request,
    tenant: Annotated[str, Path(description="tenant name")],
    engram: Annotated[Engram, Depends(get_engram)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TenantContext:
    """The context the admission found (api/admission.py) before the body was read, else the key's."""
    admitted = getattr(request.state, CONTEXT, None)
    if isinstance(admitted, TenantContext) and admitted.name == tenant:
        return admitted
    return await engram.tenants.authenticate(tenant, credentials.credentials if credentials else None)


async def admin(
    engram: Annotated[Engram, Depends(get_engram)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """The admin API is for the configured admin key alone: never a tenant's or a user's key."""
    configured = engram.settings.admin_key
    if credentials is None:
        raise Unauthorized("missing admin key: send 'Authorization: Bearer <ENGRAM_ADMIN_KEY>'")
    if configured is None or engram.settings.tenant is not None:
        raise Forbidden("the admin API is off here: set ENGRAM_ADMIN_KEY on a service serving every tenant")
    if key_tenant(credentials.credentials) is not None:
        raise Forbidden("a tenant's API key cannot use the admin API: send the admin key")
    if not hmac.compare_digest(credentials.credentials.encode(), configured.get_secret_value().encode()):
        raise Unauthorized("invalid admin key")


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
