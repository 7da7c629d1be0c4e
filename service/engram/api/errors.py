"""The error hierarchy mapped to HTTP once; no try/except in routes."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from engram.errors import EngramError


async def _engram_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, EngramError)
    headers = {"WWW-Authenticate": 'Bearer realm="engram"'} if exc.http_status == 401 else None
    return JSONResponse({"detail": str(exc)}, status_code=exc.http_status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(EngramError, _engram_error)
