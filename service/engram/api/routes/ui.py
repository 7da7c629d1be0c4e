"""The memory browser: one static page and its assets (service/engram/web), no server-side state.
The page holds no data; everything it shows comes from the REST API with the tenant's key."""

from __future__ import annotations

import html
from importlib import resources
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
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


@router.get("/", include_in_schema=False)
async def start(request: Request) -> Response:
    """The service's address opened in a browser: where to go (the memory browser, the API docs);
    a program gets the same links as JSON."""
    only = request.app.state.settings.tenant
    tenant = only or "default"
    links = {"memory_browser": f"/t/{tenant}/ui", "api_docs": "/docs", "openapi": "/openapi.json", "health": "/readyz"}
    if "text/html" not in request.headers.get("accept", ""):
        return JSONResponse({"service": "engram", **links})
    others = "" if only else " (the tenant <code>make run</code> creates; another tenant's is /t/&lt;name&gt;/ui)"
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>engram</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>engram</h1><p>Long-term memory for LLM agents.</p><ul>
<li><a href="{links["memory_browser"]}">Memory browser</a> of tenant <b>{html.escape(tenant)}</b>{others}</li>
<li><a href="/docs">REST API reference</a> (and <a href="/redoc">ReDoc</a>)</li>
<li>MCP: <code>/t/{html.escape(tenant)}/mcp</code> with <code>Authorization: Bearer &lt;API key&gt;</code></li>
</ul></body></html>"""
    return HTMLResponse(page, headers={"Content-Security-Policy": POLICY, "Cache-Control": "no-store"})


def assets() -> StaticFiles:
    return StaticFiles(directory=str(WEB))
