"""Liveness and readiness probes."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from engram.api.deps import EngramDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(engram: EngramDep) -> JSONResponse:
    """The database answers; 503 otherwise. ``second_vectors``: the memories still waiting for their
    second vector, over the tenants this process has looked at, the oldest one's wait, and whether
    the retrieval model is loaded yet (seconds after a start; searches go without it meanwhile)."""
    try:
        async with engram.pool.acquire(timeout=2) as conn:
            await conn.fetchval("SELECT 1")
    except Exception as exc:  # any failure means not ready
        return JSONResponse({"status": "unavailable", "detail": type(exc).__name__}, status_code=503)
    return JSONResponse({"status": "ready", "second_vectors": engram.retrieval.summary()})
