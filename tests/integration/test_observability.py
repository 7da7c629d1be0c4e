"""Metrics and logs of the running service: /metrics after traffic has every family counting;
each request gets a request id, in the response and in JSON log lines; a search is logged with
its contents redacted at info level and its channels' top candidates at debug level."""

import io
import json
import logging

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from engram.observability.logs import JsonFormatter
from tests.conftest import unique_tenant

FAMILIES = {
    "engram_http_request_seconds",
    "engram_mcp_tool_seconds",
    "engram_search_stage_seconds",
    "engram_searches",
    "engram_cache_lookups",
    "engram_cache_hit_ratio",
    "engram_write_decisions",
    "engram_job_runs",
    "engram_db_pool_connections",
}


async def traffic(service, engram) -> str:
    name = unique_tenant("obs")
    _, key = await engram.tenants.create(name)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=f"{service.url}/t/{name}/v1", headers=headers) as api:
        for content in ("用户偏好顺丰快递", "用户偏好顺丰快递", "The user's order 12345 was delayed"):
            # of a conversation: the search looks for its neighbours (the context stage)
            body = {"content": content, "session_id": "chat-1"}
            written = (await api.post("/memories", json=body)).raise_for_status()
        (await api.get(f"/memories/{written.json()['memory']['id']}")).raise_for_status()
        for _ in range(2):  # the second one finds its query embedding in the cache
            (await api.post("/search", json={"query": "order 12345"})).raise_for_status()
        (await api.post("/remember", json={"user": "hello!"})).raise_for_status()  # nothing worth keeping
        (await api.post("/forgetting/run")).raise_for_status()
        (await api.post("/consolidation/run")).raise_for_status()
    transport = streamable_http_client(f"{service.url}/t/{name}/mcp", http_client=httpx2.AsyncClient(headers=headers))
    async with Client(transport) as mcp:
        assert not (await mcp.call_tool("search_memory", {"query": "快递"})).is_error
    return name


async def test_every_metric_family_counts_after_traffic(service, engram, settings):
    tenant = await traffic(service, engram)
    async with httpx.AsyncClient(base_url=service.url) as client:
        scraped = await client.get("/metrics")
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
    assert set(families) >= FAMILIES, FAMILIES - set(families)

    def value(family: str, suffix: str = "", **labels: str) -> float:
        return sum(
            s.value
            for s in families[family].samples
            if s.name.endswith(suffix) and all(s.labels.get(k) == v for k, v in labels.items())
        )

    assert value("engram_http_request_seconds", "_count", route="/t/{tenant}/v1/search", status="200") >= 2
    assert value("engram_http_request_seconds", "_count", route="/t/{tenant}/mcp") >= 1
    one_memory = "/t/{tenant}/v1/memories/{memory_id}"  # the template, without its {id:convertor}
    assert value("engram_http_request_seconds", "_count", route=one_memory, status="200") >= 1
    assert value("engram_mcp_tool_seconds", "_count", tool="search_memory", outcome="ok") >= 1
    for stage in ("vector", "keyword", "rule", "hydrate", "embed", "context"):
        assert value("engram_search_stage_seconds", "_count", stage=stage) >= 1, stage
    assert value("engram_searches", "_total", tenant=tenant) == 3
    assert value("engram_cache_lookups", "_total", result="hit") >= 1 and value("engram_cache_hit_ratio") > 0
    for outcome in ("created", "duplicate", "skipped"):
        assert value("engram_write_decisions", "_total", tenant=tenant, outcome=outcome) >= 1, outcome
    assert value("engram_job_runs", "_total", job="forgetting", tenant=tenant) == 1
    assert value("engram_job_runs", "_total", job="consolidation", tenant=tenant) == 1
    assert value("engram_db_pool_connections", state="max") == settings.pool_max_size  # both pools: the budget
    assert all("/t/obs-" not in s.labels.get("route", "") for s in families["engram_http_request_seconds"].samples)


async def test_requests_carry_an_id_into_json_logs_and_searches_are_redacted(service, engram):
    name = unique_tenant("log")
    _, key = await engram.tenants.create(name)
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter())
    root, logger = logging.getLogger(), logging.getLogger("engram")
    level = logger.level
    root.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        async with httpx.AsyncClient(base_url=f"{service.url}/t/{name}/v1") as api:
            headers = {"Authorization": f"Bearer {key}"}
            await api.post("/memories", json={"content": "The user's PIN hint is orange"}, headers=headers)
            response = await api.post(
                "/search", json={"query": "PIN hint"}, headers={**headers, "X-Request-ID": "req-obs-1"}
            )
            assert response.headers["x-request-id"] == "req-obs-1"
            assert (await api.get("/stats", headers=headers)).headers["x-request-id"]  # made up when not sent
    finally:
        root.removeHandler(handler)
        logger.setLevel(level)
    entries = [json.loads(line) for line in lines.getvalue().splitlines()]
    mine = [e for e in entries if e.get("request_id") == "req-obs-1"]
    info = next(e for e in mine if e["message"] == "search")
    assert info["level"] == "info" and info["query"] == "<8 characters>" and info["tenant"] == name
    assert "PIN hint" not in json.dumps(info)
    debug = next(e for e in mine if e["message"] == "search channels")
    assert debug["level"] == "debug" and debug["query"] == "PIN hint" and debug["top"]["keyword"]
    request = next(e for e in mine if e["message"] == "request")
    assert request["route"] == "/t/{tenant}/v1/search" and request["status"] == 200
