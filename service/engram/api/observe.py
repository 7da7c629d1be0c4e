"""Every HTTP request: a request id (the caller's X-Request-ID or a new one) set for the logs and
echoed back, a latency observation by route, and one log line."""

from __future__ import annotations

import contextlib
import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.observability import logs, metrics
from engram.services.slices import ACTIVITY

log = logging.getLogger("engram.http")


def route_of(scope: Scope) -> str:
    """The route template ("/t/{tenant}/v1/memories/{memory_id}"), never a raw path: labels must
    stay few whatever paths clients send."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)  # without {id:convertor}
    if scope["path"].startswith("/t/") and not (template or "").startswith("/t/{tenant}/"):
        # Inside the MCP transports mounted at /t/{tenant}: their own route ("/mcp"), if any.
        return f"/t/{{tenant}}{template}" if template and template != "/t/{tenant}" else "/t/{tenant}/*"
    return template or "unmatched"


class Observe:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        request_id = logs.new_request_id(headers.get(b"x-request-id", b"").decode("latin-1") or None)
        token = logs.request_id.set(request_id)
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        try:
            with contextlib.nullcontext() if _stream(scope) else ACTIVITY.request():
                await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            route = route_of(scope)
            metrics.requests.labels(scope["method"], route, str(status)).observe(seconds)
            log.info(
                "request",
                extra={"method": scope["method"], "route": route, "status": status, "ms": round(seconds * 1000, 1)},
            )
            logs.request_id.reset(token)


def _stream(scope: Scope) -> bool:
    """An MCP event stream an agent keeps open: not a request that waits to be served (bulk work
    in slices rests while such requests are in flight, services/slices.py)."""
    path = str(scope.get("path", ""))
    return path.endswith("/sse") or (scope.get("method") == "GET" and path.endswith("/mcp"))
