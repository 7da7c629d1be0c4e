"""The FastAPI application: REST routes first, then the MCP transports mounted under /t/{tenant}."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.routing import Match, Mount, get_route_path
from starlette.types import ASGIApp, Scope

from engram import __version__, scheduler
from engram.api.admission import Admission
from engram.api.errors import Boundary, install_error_handlers
from engram.api.observe import Observe
from engram.api.routes import (
    admin,
    docs,
    erasure,
    health,
    lifecycle,
    memories,
    oauth,
    observability,
    retrieval,
    transfer,
    ui,
    users,
)
from engram.mcp.http import mcp_http_app
from engram.mcp.tools import build_mcp
from engram.observability import metrics
from engram.runtime import Engram, exempt_startup_objects, open_engram
from engram.settings import Settings

# The MCP transports' paths (as engram.mcp.http.TransportRouter dispatches them), under
# /t/{tenant} and, for one end user, under /t/{tenant}/u/{user}.
_TRANSPORTS = r"/(?:(?:mcp|sse)/*|messages(?:/.*)?)"
_TENANT_TRANSPORT = re.compile(r"/t/[^/]+" + _TRANSPORTS)
_USER_TRANSPORT = re.compile(r"/t/[^/]+/u/[^/]+" + _TRANSPORTS)


class TransportMount(Mount):
    """The MCP transports mounted under a prefix, matching their own paths only: any other path
    there stays the REST API's, so a method a route lacks is a 405 with Allow and an unknown path a
    404, both in the error model (a mount matching everything would answer 404 to both)."""

    def __init__(self, path: str, app: ASGIApp, paths: re.Pattern[str]) -> None:
        super().__init__(path, app=app)
        self._paths = paths

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and not self._paths.fullmatch(get_route_path(scope)):
            return Match.NONE, {}
        return super().matches(scope)


def create_app(settings: Settings, dsn: str) -> FastAPI:
    state: dict[str, Engram] = {}
    mcp_server = build_mcp(lambda: state["engram"])

    async def authenticate(tenant: str, key: str | None):
        return await state["engram"].tenants.authenticate(tenant, key)

    async def admit(tenant: str, size: int) -> None:
        await state["engram"].intake.admit(tenant, size)

    mcp_app = mcp_http_app(mcp_server, authenticate, admit, settings.allowed_hosts)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engram = await open_engram(settings, dsn)
        state["engram"] = app.state.engram = engram
        await exempt_startup_objects()
        pools = (engram.pool, engram.nearest)  # together, the process's budget of connections
        metrics.watch(
            lambda: sum(p.get_size() for p in pools),
            lambda: sum(p.get_idle_size() for p in pools),
            lambda: sum(p.get_max_size() for p in pools),
        )
        lifecycle = settings.lifecycle
        jobs = (
            asyncio.create_task(scheduler.run_forever(engram, lifecycle.scheduler_interval_seconds))
            if lifecycle.scheduler_enabled
            else None
        )
        second_vectors = asyncio.create_task(engram.retrieval.run_forever())  # loads its model on a thread
        try:
            # A mounted app's lifespan never runs: the MCP session manager is run from here.
            async with mcp_server.session_manager.run():
                yield
        finally:
            second_vectors.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await second_vectors
            if jobs is not None:
                jobs.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await jobs
            await engram.close()

    app = FastAPI(
        title="engram",
        version=__version__,
        description="Long-term memory for LLM agents. MCP at /t/{tenant}/mcp (streamable HTTP) "
        "and /t/{tenant}/sse, and for one end user at /t/{tenant}/u/{user}/mcp; REST below. "
        "Authenticate with `Authorization: Bearer <tenant API key>` (or a key bound to one user).",
        lifespan=lifespan,
        docs_url=None,  # served below, with local assets
        redoc_url=None,
    )
    app.state.settings = settings  # what a route needs before (or without) the service: see ui.start
    install_error_handlers(app)
    app.add_middleware(Admission)  # inside the boundary: a key is checked once a body fits
    app.add_middleware(
        Boundary,
        max_body_bytes=settings.max_body_bytes,
        max_import_bytes=settings.max_import_bytes,
        max_request_bytes=settings.max_request_bytes,
    )
    app.add_middleware(Observe)  # outermost: it sees the status the boundary answered
    app.include_router(health.router)
    app.include_router(oauth.router)
    if settings.metrics_enabled:
        app.include_router(observability.router)
    app.include_router(memories.router)
    app.include_router(lifecycle.router)
    app.include_router(retrieval.router)
    app.include_router(transfer.router)
    app.include_router(users.router)
    app.include_router(erasure.router)
    app.include_router(admin.router)
    app.include_router(ui.router)
    app.include_router(docs.router)
    app.mount(docs.ASSETS, docs.assets(), name="docs-assets")
    app.mount("/ui/assets", ui.assets(), name="ui-assets")
    # Registered last, after the REST routes it shares /t/{tenant} with.
    app.router.routes.append(TransportMount("/t/{tenant}/u/{user}", mcp_app, _USER_TRANSPORT))
    app.router.routes.append(TransportMount("/t/{tenant}", mcp_app, _TENANT_TRANSPORT))
    return app
