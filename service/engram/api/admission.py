"""Before a tenant's REST request is read: its key is checked, so a flood of bodies without a
valid key costs no parse (401/403 at once), and its declared body is charged to the tenant's share
of the intake (services/intake.py), so one tenant's bodies cannot take the event loop from the
others. The context found is handed to the route (api/deps.py), which does not check again."""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from engram.api.errors import response_for
from engram.errors import EngramError
from engram.mcp.http import bearer_token, declared_length

_TENANT_API = re.compile(r"^/t/([^/]+)/v1/")
CONTEXT = "tenant_context"  # where, in the request's state, the authenticated context is kept


class Admission:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = _TENANT_API.match(str(scope.get("path", ""))) if scope["type"] == "http" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        engram = scope["app"].state.engram
        try:
            context = await engram.tenants.authenticate(found.group(1), bearer_token(scope))
            await engram.intake.admit(context.name, declared_length(scope))
        except EngramError as exc:
            await response_for(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})[CONTEXT] = context
        await self.app(scope, receive, send)
