"""Retries after a transient failure: growing, bounded, and spread so tenants do not retry in step."""

import random

from engram_operator.handlers import backoff


def test_the_delay_doubles_up_to_five_minutes_within_half_and_all_of_its_bound():
    for retry, bound in ((0, 5.0), (1, 10.0), (2, 20.0), (6, 300.0), (20, 300.0)):
        assert backoff(retry, lambda: 0.0) == bound / 2
        assert backoff(retry, lambda: 1.0) == bound


def test_tenants_that_failed_together_retry_at_different_times():
    rng = random.Random(7)
    delays = [backoff(3, rng.random) for _ in range(50)]
    assert all(20.0 <= d <= 40.0 for d in delays)
    assert len({round(d, 1) for d in delays}) > 25
