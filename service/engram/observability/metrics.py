"""Prometheus metrics of the process, scraped at /metrics.

Metrics are process-wide by nature, so they are module-level objects in a registry of engram's
own (not the client library's default one). Tenant labels are used only on counters, where a
series per tenant is cheap; histograms are labelled by operation alone.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)
# Milliseconds to seconds: searches take ~10 ms, writes of a batch ~200 ms, LLM calls seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24)

requests = Histogram(
    "engram_http_request_seconds",
    "HTTP requests by route",
    ["method", "route", "status"],
    buckets=BUCKETS,
    registry=REGISTRY,
)
tools = Histogram(
    "engram_mcp_tool_seconds", "MCP tool calls by tool", ["tool", "outcome"], buckets=BUCKETS, registry=REGISTRY
)
search_stages = Histogram(
    "engram_search_stage_seconds",
    "Search stages: each channel, the query embedding, hydration, context, rewrite",
    ["stage"],
    buckets=BUCKETS,
    registry=REGISTRY,
)
searches = Counter("engram_searches_total", "Searches", ["tenant"], registry=REGISTRY)
cache_lookups = Counter("engram_cache_lookups_total", "Query-embedding cache lookups", ["result"], registry=REGISTRY)
cache_hit_ratio = Gauge("engram_cache_hit_ratio", "Hits / lookups of the query-embedding cache", registry=REGISTRY)
# The process's lookups, hits first: the ratio is over the same lookups the counter counts.
_lookups = [0, 0]


def cache_lookup(hit: bool) -> None:
    cache_lookups.labels("hit" if hit else "miss").inc()
    _lookups[0] += hit
    _lookups[1] += 1


cache_hit_ratio.set_function(lambda: _lookups[0] / _lookups[1] if _lookups[1] else 0.0)
write_decisions = Counter(
    "engram_write_decisions_total",
    "What became of each memory written: created, duplicate, touched, merged, superseded, skipped",
    ["tenant", "outcome"],
    registry=REGISTRY,
)
retrieval_vectors = Counter(
    "engram_retrieval_vectors_total", "Second vectors (the retrieval model's) made", ["tenant"], registry=REGISTRY
)
# Gauges per tenant: one series each, updated by the worker after each tenant's round.
retrieval_backlog = Gauge(
    "engram_retrieval_backlog", "Memories waiting for their second vector", ["tenant"], registry=REGISTRY
)
retrieval_lag = Gauge(
    "engram_retrieval_lag_seconds",
    "Age of the oldest memory waiting for its second vector (0: none waits)",
    ["tenant"],
    registry=REGISTRY,
)
job_runs = Counter("engram_job_runs_total", "Forgetting and consolidation runs", ["job", "tenant"], registry=REGISTRY)
job_changes = Counter(
    "engram_job_changes_total",
    "What the jobs did: forgotten, expired, purged, merged, derived",
    ["job", "change"],
    registry=REGISTRY,
)
pool_connections = Gauge(
    "engram_db_pool_connections", "Database pool connections by state", ["state"], registry=REGISTRY
)


@contextlib.contextmanager
def timed(histogram: Histogram, *labels: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        histogram.labels(*labels).observe(time.perf_counter() - started)


def watch(size: Callable[[], int], idle: Callable[[], int], maximum: Callable[[], int]) -> None:
    """Read the pool's numbers at every scrape (the latest pool opened here)."""
    pool_connections.labels("in_use").set_function(lambda: size() - idle())
    pool_connections.labels("idle").set_function(idle)
    pool_connections.labels("max").set_function(maximum)
