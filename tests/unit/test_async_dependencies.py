"""Every route and every dependency of the REST app is a coroutine: FastAPI runs a plain function in
a worker thread, a hop to another thread and back on every request (under load, 30 threads and a
share of the event loop's time spent waking them)."""

from __future__ import annotations

import inspect
from pathlib import Path

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from engram.api.app import create_app
from engram.settings import Settings


def _runs_in_a_thread(call) -> bool:
    """A function, or an instance whose call method (HTTPBearer's), that is neither a coroutine nor
    an async generator (a dependency with cleanup)."""
    target = call if inspect.isfunction(call) or inspect.ismethod(call) else type(call).__call__
    return not (inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target))


def _calls(dependant: Dependant):
    yield dependant.call
    for child in dependant.dependencies:
        yield from _calls(child)


def _routes(routes, added=()):
    """(route, the dependencies its routers add) through every included router."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route, added
        elif hasattr(route, "original_router"):  # FastAPI's lazily included router
            extra = tuple(d.dependency for d in route.include_context.dependencies)
            yield from _routes(route.original_router.routes, (*added, *extra))


def test_no_route_or_dependency_runs_in_a_worker_thread():
    placeholder = "postgresql://unused@localhost:1/unused"
    app = create_app(Settings(database_url=placeholder, state_dir=Path("/nonexistent")), placeholder)
    routes = list(_routes(app.routes))
    assert len(routes) > 20
    threaded = {
        f"{route.path}: {getattr(call, '__qualname__', type(call).__name__)}"
        for route, added in routes
        for call in (*_calls(route.dependant), *added)
        if call is not None and _runs_in_a_thread(call)
    }
    assert not threaded
