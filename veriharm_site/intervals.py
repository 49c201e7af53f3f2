"""Confidence intervals of shares, the same everywhere a page or an API shows one (pure).

A share of k in n gets the Wilson score interval (statsmodels' `proportion_confint`): unlike
p ± z·SE it stays inside 0..1 and does not shrink to nothing at 0 of n or n of n, where the
standard error is 0 whatever n is (0 of 11 is 0.0-25.9%, not "0.0% ± 0.0"). A mean of
per-candidate shares (TA with repetitions) gets the same interval with each candidate counted
once, k = mean · n: the candidates, not the trials, are the independent draws.

Figures that are no share of independent draws (a ratio of two counts over resampled items,
a difference of paired shares) are bootstrapped over their units, with a fixed seed so that a
page shows the same interval on every load (`bootstrap_means`, `percentile_interval`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from statsmodels.stats.proportion import proportion_confint

LEVEL = 0.95
WILSON = "95% Wilson score interval"
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240607
BOOTSTRAP_BLOCK = 100


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def as_dict(self, prefix: str) -> dict[str, float]:
        return {f"{prefix}_ci_low": self.low, f"{prefix}_ci_high": self.high}


def wilson(k: float, n: float) -> Interval | None:
    """The Wilson interval of k successes in n (k may be fractional: a mean share times n); None for n = 0."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"a share needs 0 <= k <= n, got k = {k}, n = {n}")
    low, high = proportion_confint(k, n, alpha=1 - LEVEL, method="wilson")
    # Rounded past float noise, so that 0 of n starts at 0.0 and n of n ends at 1.0 exactly.
    return Interval(max(0.0, round(float(low), 12)), min(1.0, round(float(high), 12)))


def wilson_of_share(share: float | None, n: int) -> Interval | None:
    """`wilson` of a share already divided out, over n independent units."""
    if share is None:
        return None
    return wilson(min(max(share * n, 0.0), float(n)), n)


def bootstrap_means(columns: np.ndarray) -> np.ndarray:
    """The column means of `columns` (one row per unit, one column per figure) over each of
    BOOTSTRAP_RESAMPLES resamples of its rows with replacement, as a (resamples, columns) array.
    Seeded: the same rows are drawn for the same number of units on every call, so an interval does
    not move between two loads of a page; drawn a block at a time, so a large run stays in memory."""
    units = len(columns)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    # Figure by figure, each a contiguous row: gathering one figure at a time is several times
    # faster than gathering whole rows of every figure.
    figures = np.ascontiguousarray(np.asarray(columns, dtype=float).T)
    means = np.empty((BOOTSTRAP_RESAMPLES, len(figures)))
    for start in range(0, BOOTSTRAP_RESAMPLES, BOOTSTRAP_BLOCK):
        stop = min(start + BOOTSTRAP_BLOCK, BOOTSTRAP_RESAMPLES)
        rows = rng.integers(0, units, size=(stop - start, units))
        for j, figure in enumerate(figures):
            means[start:stop, j] = figure[rows].mean(axis=1)
    return means


def percentile_interval(values: np.ndarray) -> Interval | None:
    """The percentile bootstrap interval of a statistic's values over the resamples. Resamples on
    which it is undefined (NaN: a precision with no predicted positive) are left out; None when
    fewer than half give a value, as an interval of those few would claim more than they show."""
    defined = values[~np.isnan(values)]
    if not len(values) or len(defined) * 2 < len(values):
        return None
    alpha = 1 - LEVEL
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return Interval(round(float(low), 12) + 0.0, round(float(high), 12) + 0.0)


def percent_text(value: float | None, digits: int = 1) -> str:
    """A share as "12.3%", or "–" when there is none."""
    if value is None:
        return "–"
    return f"{value * 100:.{digits}f}%"


def interval_text(interval: Interval | None, digits: int = 1) -> str:
    """ "12.3–45.6%", or "" when there is no interval."""
    if interval is None:
        return ""
    return f"{interval.low * 100:.{digits}f}–{interval.high * 100:.{digits}f}%"
