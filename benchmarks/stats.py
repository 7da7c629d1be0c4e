"""Latency percentiles, the one way every benchmark reports them."""

from __future__ import annotations

import statistics


def quantile(samples: list[float], q: float) -> float:
    """The sample at quantile ``q`` (nearest rank), or NaN without samples."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def p50_p95_p99(samples: list[float]) -> tuple[float, float, float]:
    return statistics.median(samples), quantile(samples, 0.95), quantile(samples, 0.99)


def percentiles(samples: list[float]) -> str:
    p50, p95, p99 = p50_p95_p99(samples)
    return f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, p99 {p99:.1f} ms"
