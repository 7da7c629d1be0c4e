"""The API's reference pages (Swagger UI at /docs, ReDoc at /redoc) with their scripts and styles
served from this service, not a CDN: they work offline and behind a firewall."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

# The files of Swagger UI and ReDoc, as fastapi-offline packages them.
STATIC = Path(fastapi_offline.__file__).parent / "static"
ASSETS = "/docs/assets"
TITLE = "engram API"

router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def swagger_ui() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title=TITLE,
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/favicon.png",
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from validator.swagger.io
    )


@router.get("/redoc")
async def redoc() -> HTMLResponse:
    return get_redoc_html(
        openapi_url="/openapi.json",
        title=TITLE,
        redoc_js_url=f"{ASSETS}/redoc.standalone.js",
        redoc_favicon_url=f"{ASSETS}/favicon.png",
        with_google_fonts=False,
    )


def assets() -> StaticFiles:
    return StaticFiles(directory=STATIC)
