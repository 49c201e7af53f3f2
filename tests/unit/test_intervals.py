"""The intervals every page and API shows beside a share, against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from veriharm_site.intervals import (
    Interval,
    bootstrap_means,
    interval_text,
    percentile_interval,
    wilson,
    wilson_of_share,
)

Z = 1.959963984540054  # the 97.5% point of the standard normal


def hand_wilson(k: float, n: float) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    centre = p + Z * Z / (2 * n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre - half) / (1 + Z * Z / n), (centre + half) / (1 + Z * Z / n)


@pytest.mark.parametrize(("k", "n"), [(0, 11), (11, 11), (3, 10), (1, 2), (5.5, 11), (7, 22)])
def test_wilson_is_the_hand_computation(k, n):
    interval = wilson(k, n)
    assert (interval.low, interval.high) == pytest.approx(hand_wilson(k, n), abs=1e-9)


def test_none_and_all_of_n_have_a_width_the_standard_error_does_not():
    assert interval_text(wilson(0, 11)) == "0.0–25.9%"
    assert interval_text(wilson(11, 11)) == "74.1–100.0%"
    # At 0 of n the interval starts at 0 exactly and at n of n it ends at 1 exactly.
    assert wilson(0, 11).low == 0.0 and wilson(11, 11).high == 1.0
    # It narrows as n grows, where ± SE would say 0 at every n.
    assert wilson(0, 100).high < wilson(0, 11).high


def test_a_share_without_units_has_no_interval_and_bad_counts_are_refused():
    assert wilson(0, 0) is None and wilson_of_share(None, 5) is None and interval_text(None) == ""
    assert wilson_of_share(0.5, 22) == wilson(11, 22)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(12, 11)


def test_bootstrap_resamples_are_seeded_and_the_interval_is_the_percentiles():
    columns = np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    means = bootstrap_means(columns)
    assert means.shape == (2000, 2) and np.array_equal(means, bootstrap_means(columns))
    # Every resample's mean is one of 0, 1/5, .. 1, near 3/5 on average; a constant column stays constant.
    assert set(np.round(means[:, 0] * 5, 9)) <= {0, 1, 2, 3, 4, 5} and abs(means[:, 0].mean() - 0.6) < 0.02
    assert (means[:, 1] == 1).all()
    values = np.arange(1000, dtype=float) / 999
    assert percentile_interval(values) == Interval(
        round(float(np.quantile(values, 0.025)), 12), round(float(np.quantile(values, 0.975)), 12)
    )
    # Undefined on most resamples: no interval rather than one of the few that are defined.
    mostly_undefined = np.full(100, np.nan)
    mostly_undefined[:40] = 0.5
    assert percentile_interval(mostly_undefined) is None
    mostly_undefined[:60] = 0.5
    assert percentile_interval(mostly_undefined) == Interval(0.5, 0.5)
