"""The operator's own Prometheus metrics: how long each tenant's reconciliations take and how they
fail. A registry of its own, served on its own port (``--metrics-port``), apart from kopf's probe."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

REGISTRY = CollectorRegistry()
reconcile_seconds = Histogram(
    "engram_operator_reconcile_seconds",
    "Duration of a tenant's reconciliations (database and children)",
    ["namespace", "tenant", "trigger"],
    registry=REGISTRY,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
reconcile_errors = Counter(
    "engram_operator_reconcile_errors_total",
    "Reconciliations that failed: refused (needs a change of spec or configuration) or retrying",
    ["namespace", "tenant", "outcome"],
    registry=REGISTRY,
)


@contextmanager
def timed(namespace: str, tenant: str, trigger: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        reconcile_seconds.labels(namespace, tenant, trigger).observe(time.perf_counter() - started)


def failed(namespace: str, tenant: str, outcome: str) -> None:
    reconcile_errors.labels(namespace, tenant, outcome).inc()


def serve(port: int, address: str = "0.0.0.0") -> None:
    """/metrics on ``port``, from a daemon thread (it stops with the process)."""
    start_http_server(port, addr=address, registry=REGISTRY)
