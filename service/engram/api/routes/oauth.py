"""engram has no OAuth, only API keys. An MCP client refused with a 401 goes looking for an OAuth
server (the discovery documents, then dynamic client registration at /register); these paths
answer it with a 404 that says what to send instead, which the client shows its user."""

from __future__ import annotations

from fastapi import APIRouter

from engram.domain.tenancy import KEY_HINT
from engram.errors import NotFound

router = APIRouter(include_in_schema=False)
SEEKERS = (
    "/.well-known/oauth-protected-resource{rest:path}",
    "/.well-known/oauth-authorization-server{rest:path}",
    "/.well-known/openid-configuration{rest:path}",
    "/register",
    "/authorize",
    "/token",
)


async def no_oauth() -> None:
    raise NotFound(f"no OAuth here: {KEY_HINT}")


for path in SEEKERS:
    router.add_api_route(path, no_oauth, methods=["GET", "POST"])
