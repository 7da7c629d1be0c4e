"""The memory browser: one static page and its assets (service/engram/web), no server-side state.
The page holds no data; everything it shows comes from the REST API with the tenant's key."""

from __future__ import annotations

from importlib import resources
from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from engram.domain.tenancy import validate_tenant_name

router = APIRouter(tags=["ui"])
WEB = resources.files("engram") / "web"
# Nothing but the page's own files runs or loads: no inline script, no CDN, no framing.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


@router.get("/t/{tenant}/ui", response_class=HTMLResponse, include_in_schema=False)
async def memory_browser(tenant: Annotated[str, Path()]) -> HTMLResponse:
    validate_tenant_name(tenant)
    return HTMLResponse(
        (WEB / "index.html").read_text(encoding="utf-8"),
        headers={"Content-Security-Policy": POLICY, "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"},
    )


def assets() -> StaticFiles:
    return StaticFiles(directory=str(WEB))
