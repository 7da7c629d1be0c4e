"""Serving the MCP tools over HTTP under ``/t/{tenant}/``: streamable HTTP at ``mcp``, SSE at ``sse``;
the same under ``/t/{tenant}/u/{user}/`` for one end user (every call acts for that user).

A pure-ASGI guard checks the tenant's bearer key before any MCP parsing (401/403 as JSON) and
puts the tenant into the request scope, where the tools read it.

MCP clients (the Inspector, mcp-remote, an SDK client given an OAuth provider) take any 401 as
"start OAuth": they probe the OAuth discovery URLs, then try to register a client, whatever the
challenge says (an RFC 6750 ``error="invalid_token"`` does not stop them). engram has no OAuth,
only API keys, so a key that was sent and refused is a 403 here (RFC 9110: credentials given but
not sufficient; the client should not repeat them), without a challenge, and its message names
the key and the header to send: the client shows that message instead of an OAuth error. Only a
request without a key stays a 401 with its ``Bearer`` challenge (HTTP's answer to missing
credentials). REST keeps 401 for both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable

from mcp.server import MCPServer
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.domain.boundary import valid_user_id
from engram.domain.tenancy import KEY_HINT, TenantContext
from engram.errors import EngramError, Forbidden, Misdirected, NotFound, Unauthorized
from engram.mcp.tools import TENANT_SCOPE_KEY

Authenticate = Callable[[str, str | None], Awaitable[TenantContext]]
Admit = Callable[[str, int], Awaitable[None]]  # a tenant, the bytes its request declares


def key_refusal(exc: EngramError, tenant: str, token: str | None) -> EngramError:
    """The guard's answer to a key the service refused, for an MCP client (see the module's doc)."""
    if isinstance(exc, Unauthorized):
        if token is None:
            return Unauthorized(f"missing API key for tenant {tenant!r}: {KEY_HINT}")
        return Forbidden(f"{exc} for tenant {tenant!r}: {KEY_HINT}")
    if isinstance(exc, Forbidden):  # a key of another tenant
        return Forbidden(f"{exc}: {KEY_HINT}")
    return exc


def bearer_token(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def declared_length(scope: Scope) -> int:
    """The body size a request declares (0 without a Content-Length)."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


class TenantGuard:
    """Authenticates every HTTP request of the mounted MCP apps against the path's tenant, and
    charges its body to the tenant's share of the intake, before the body is read."""

    def __init__(self, app: ASGIApp, authenticate: Authenticate, admit: Admit) -> None:
        self._app = app
        self._authenticate = authenticate
        self._admit = admit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        params = scope.get("path_params", {})
        tenant, user = params.get("tenant", ""), params.get("user")
        token = bearer_token(scope)
        try:
            context = await self._authenticate(tenant, token)
            if user is not None:  # a per-user URL: every call acts for that user
                context = context.pinned_to(valid_user_id(user))
        except EngramError as exc:
            await _json_error(send, key_refusal(exc, tenant, token))
            return
        try:
            await self._admit(context.name, declared_length(scope))
        except EngramError as exc:
            await _json_error(send, exc)
            return
        assert token is not None
        scope[TENANT_SCOPE_KEY] = context
        # The SDK ties a session to the credential that opened it: another key gets 404 on it.
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token=token,
                client_id=tenant,
                scopes=[],
                # a session opened for one user's URL is not another's
                subject=hashlib.sha256(f"{token}\x1f{user or ''}".encode()).hexdigest()[:16],
            )
        )
        await self._app(scope, receive, send)


class TransportRouter:
    """Dispatches ``/mcp`` to streamable HTTP and everything else (``/sse``, ``/messages/``) to SSE."""

    def __init__(self, streamable: ASGIApp, sse: ASGIApp) -> None:
        self._streamable = streamable
        self._sse = sse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        relative = path[len(root) :] if path.startswith(root) else path
        if relative.rstrip("/") == "/mcp":
            await self._streamable(scope, receive, send)
        elif relative.rstrip("/") == "/sse" or relative.startswith("/messages"):
            await self._sse(scope, receive, send)
        else:  # under /t/{tenant}/ but neither a REST route nor a transport
            await _json_error(send, NotFound(f"no such path: {path}"))


def host_allowed(host: str, allowed: list[str]) -> bool:
    """As the MCP SDK judges it: an exact match, or ``name:*`` for any port of ``name``."""
    return host in allowed or any(a.endswith(":*") and host.startswith(a[:-1]) for a in allowed)


class HostCheck:
    """The transports' DNS rebinding protection, answered in the error model and naming the
    setting to change (the SDK's own answer is a bare 421 or 403 that names nothing)."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]) -> None:
        self._app = app
        self._allowed = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "*" not in self._allowed:
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            origin = headers.get(b"origin", b"").decode("latin-1")
            now = ", ".join(self._allowed)
            if not host_allowed(host, self._allowed):
                message = (
                    f"this service does not answer for the host {host!r}: add it to ENGRAM_ALLOWED_HOSTS (now {now})"
                )
                await _json_error(send, Misdirected(message))
                return
            if origin and not host_allowed(origin.split("://", 1)[-1], self._allowed):
                message = (
                    f"requests from the origin {origin!r} are refused: add its host to ENGRAM_ALLOWED_HOSTS (now {now})"
                )
                await _json_error(send, Forbidden(message))
                return
        await self._app(scope, receive, send)


def mcp_http_app(server: MCPServer, authenticate: Authenticate, admit: Admit, allowed_hosts: list[str]) -> ASGIApp:
    # Host and Origin are checked once, by HostCheck (in the error model); the SDK checks the rest.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    streamable = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security)
    sse = server.sse_app(sse_path="/sse", message_path="/messages/", transport_security=security)
    return HostCheck(TenantGuard(TransportRouter(streamable, sse), authenticate, admit), allowed_hosts)


async def _json_error(send: Send, exc: EngramError) -> None:
    body = json.dumps(exc.body()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if exc.http_status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="engram"'))
    if (retry := getattr(exc, "retry_after_seconds", None)) is not None:
        headers.append((b"retry-after", str(retry).encode()))
    await send({"type": "http.response.start", "status": exc.http_status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
