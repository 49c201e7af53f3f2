"""The one retry schedule of work that failed on infrastructure (veriharm_site/backoff.py)."""

from __future__ import annotations

import pytest

from veriharm_site.backoff import SYSTEM_BUILD_POLL, Backoff

SHIPPED = Backoff(base=10.0, cap=120.0)  # VERIHARM_RETRY_BACKOFF_SECONDS, VERIHARM_RETRY_BACKOFF_MAX_SECONDS


def test_each_retry_waits_three_times_longer_up_to_the_cap():
    assert [SHIPPED.ceiling(n) for n in range(1, 7)] == [10, 30, 90, 120, 120, 120]
    # No overflow however many retries a task has counted.
    assert SHIPPED.ceiling(10_000) == 120


def test_the_jitter_keeps_each_wait_between_half_and_all_of_its_step():
    assert SHIPPED.delay(1, uniform=lambda: 0.0) == 5.0
    assert SHIPPED.delay(1, uniform=lambda: 1.0) == 10.0
    assert SHIPPED.delay(2, uniform=lambda: 0.5) == 22.5
    assert SHIPPED.delay(50, uniform=lambda: 1.0) == 120.0
    delays = {SHIPPED.delay(2) for _ in range(200)}
    assert all(15.0 <= d <= 30.0 for d in delays) and len(delays) > 100  # spread, not one value


def test_three_attempts_outlive_a_fault_of_twenty_seconds_where_they_used_to_end_within_four():
    # Attempts 1, 2 and 3 with the shipped settings: the last comes 20 to 40 s after the first failed.
    assert 20.0 <= SHIPPED.delay(1, uniform=lambda: 0.0) + SHIPPED.delay(2, uniform=lambda: 0.0)
    assert SHIPPED.delay(1, uniform=lambda: 1.0) + SHIPPED.delay(2, uniform=lambda: 1.0) <= 40.0


def test_a_build_is_looked_at_again_soon_then_every_fifteen_seconds_at_most():
    assert [SYSTEM_BUILD_POLL.ceiling(n) for n in range(1, 6)] == [2, 4, 8, 15, 15]


def test_retries_count_from_one():
    with pytest.raises(ValueError, match="from 1"):
        SHIPPED.ceiling(0)
