"""GET /metrics: the process's Prometheus metrics. They name tenants (searches, writes and jobs
per tenant), so with ENGRAM_METRICS_KEY set they are served only with that key."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from engram.errors import Unauthorized
from engram.mcp.http import bearer_token
from engram.observability.metrics import REGISTRY

router = APIRouter(tags=["health"])


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    wanted = request.app.state.engram.settings.metrics_key
    if wanted is not None:
        given = bearer_token(request.scope) or ""
        if not hmac.compare_digest(given.encode(), wanted.get_secret_value().encode()):
            raise Unauthorized("the metrics need the metrics key: 'Authorization: Bearer <ENGRAM_METRICS_KEY>'")
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
