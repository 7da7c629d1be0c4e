"""Every failure as one JSON error model (engram/errors.py), mapped here once: the service's own
errors, FastAPI's validation errors, unknown routes, the database out of reach (503 with
Retry-After, one warning per outage) and, for a bug, a 500 that says only the request id."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.errors import (
    EngramError,
    InvalidInput,
    PayloadTooLarge,
    TooManyRequests,
    Unavailable,
    error_body,
    invalid_input,
)
from engram.observability import logs
from engram.observability.outages import Outage
from engram.store.db import unreachable

log = logging.getLogger("engram.http")
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 415: "unsupported"}
# A memory's path whose id is no UUID (the routes take only UUIDs there, so /memories/batch stays
# the batch route's): the id is at fault, not the path.
_NOT_A_MEMORY_ID = re.compile(r"^/t/[^/]+/v1/memories/(?P<id>[^/]+)(/(forget|restore|versions|history))?/?$")
_MEMORY_ROUTES = {"batch", "timeline"}
# The database's outage while no service holds one (its start failed, or has not finished).
_NO_SERVICE = Outage(log, "database", "answering 503 until it is back")


def response_for(exc: EngramError) -> JSONResponse:
    headers = {}
    if isinstance(exc, Unavailable | TooManyRequests):
        headers["Retry-After"] = str(exc.retry_after_seconds)
    if exc.http_status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="engram"'
    return JSONResponse(exc.body(), status_code=exc.http_status, headers=headers)


async def _engram_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, EngramError)
    return response_for(exc)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    """FastAPI's refusal of a request, or a model built inside a route (filters from query
    parameters) refusing a value."""
    assert isinstance(exc, RequestValidationError | ValidationError)
    problems = exc.errors(include_url=False, include_input=False) if isinstance(exc, ValidationError) else exc.errors()
    broken = next((p for p in problems if p.get("type") == "json_invalid"), None)
    if broken is not None:  # its location is a character offset, no field (nor a batch's item)
        at = broken.get("loc", ())[-1] if broken.get("loc") else None
        where = f" at character {at}" if isinstance(at, int) else ""
        reason = broken.get("ctx", {}).get("error", "invalid JSON")
        return response_for(InvalidInput(f"the body is not valid JSON{where}: {reason}", field="body"))
    return response_for(invalid_input(problems))


def allowed_methods(request: Request) -> str:
    """Every method some route serves at this path (the router names only its first route's)."""
    routes = request.app.router.routes
    return ", ".join(
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """The router's and FastAPI's own refusals. A body that cannot even be read (not UTF-8, say) is
    invalid input like a body that is not JSON: a 422 naming the body, as documented."""
    assert isinstance(exc, HTTPException)
    if isinstance(exc.__cause__, EngramError):  # FastAPI wraps what failed reading the body (too large)
        return response_for(exc.__cause__)
    if exc.status_code == 400:
        return response_for(InvalidInput(f"the request body could not be read: {exc.detail}", field="body"))
    code = _CODES.get(exc.status_code, "error")
    routed = exc.status_code == 404 and exc.detail == "Not Found"  # the router's own: no route has this path
    if routed and (malformed := _NOT_A_MEMORY_ID.match(request.url.path)) and malformed["id"] not in _MEMORY_ROUTES:
        return response_for(InvalidInput("not a memory id: a UUID, as the API returns it", field="memory_id"))
    message = f"no such path: {request.url.path}" if routed else str(exc.detail)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = allowed_methods(request)
    return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=headers)


class ErrorDetail(BaseModel):
    code: str = Field(
        description="invalid_input, unauthorized, forbidden, not_found, conflict, too_large, unavailable..."
    )
    message: str
    field: str | None = Field(None, description="the input at fault, e.g. items[3].content")
    index: int | None = Field(None, description="the item of a batch at fault")


class ErrorBody(BaseModel):
    error: ErrorDetail


def _documented(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


# What every tenant route may answer besides success (documented once, on each router).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: _documented("no key, or a key this tenant does not know"),
    403: _documented("a key of another tenant"),
    404: _documented("no such memory"),
    409: _documented("the memory's state does not allow it (restore an active memory...)"),
    413: _documented("the request body is too large"),
    422: _documented("invalid input; field names it"),
    503: _documented("the database is unavailable; retry after Retry-After seconds"),
}


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(EngramError, _engram_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)


def database_outage(app: Any) -> Outage:
    """The outage of the database the app's service uses: each request that meets it says so, the
    first one logs it, and the first connection made once the database is back ends it."""
    engram = getattr(getattr(app, "state", None), "engram", None)
    outage = getattr(engram, "database", None)
    return outage if isinstance(outage, Outage) else _NO_SERVICE


class Boundary:
    """Outermost: bodies over the limit are refused before they are read (and before any key is
    checked); anything that escapes the handlers becomes the JSON error model, never a traceback
    or a reset connection."""

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int,
        max_import_bytes: int | None = None,
        max_request_bytes: int | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        # An import streams its body a batch at a time, so it may be far larger than a request.
        self.max_import_bytes = max_import_bytes or max_body_bytes
        # One memory, a search, a turn: a tenth of a batch's room is plenty, and a megabyte of it
        # is refused before it costs a parse.
        self.max_request_bytes = min(max_request_bytes or max_body_bytes, max_body_bytes)

    def limit(self, scope: Scope) -> int:
        path = str(scope.get("path", ""))
        if scope.get("method") == "POST" and path.endswith("/v1/import"):
            return self.max_import_bytes
        if path.endswith("/v1/memories/batch") or "/v1/" not in path:  # a batch, MCP's messages
            return self.max_body_bytes
        return self.max_request_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        app = scope.get("app")  # the service's app (a mounted one replaces it in the scope on the way in)
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        limit = self.limit(scope)
        too_large = PayloadTooLarge(f"the request body is over {limit} bytes")
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await response_for(too_large)(scope, receive, send)
            return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise too_large
            return message

        try:
            await self.app(scope, counted_receive, tracked_send)
        except Exception as exc:
            if started:
                raise
            await self._answer(exc, app)(scope, receive, send)

    @staticmethod
    def _answer(exc: Exception, app: Any = None) -> JSONResponse:
        if isinstance(exc, EngramError):
            return response_for(exc)
        if unreachable(exc):
            database_outage(app).began(exc)
            return response_for(Unavailable("the database is unavailable; retry shortly"))
        log.exception("unexpected failure")
        message = f"internal error (request id {logs.request_id.get() or '-'})"
        return JSONResponse(error_body("internal", message), status_code=500)
