"""Two systems compared on the candidates both were scored on: paired differences in TA, HSR and
SSR (pure).

Both systems ran on the same candidates, so their results are paired by candidate: an easy
candidate is easy for both. Comparing two unpaired intervals ignores that and says "no
difference" far more often than the data do. Per candidate c the difference is
d_c = x_c(A) - x_c(B) of its shares (`metrics`: t_c, h_c, s_c over its resolved trials), and the
difference of the metric is mean d_c over the n paired candidates, which is TA(A) - TA(B) over
those candidates.

The interval is the percentile bootstrap over candidates (resampling pairs, so that each
candidate keeps its two systems together; seeded, so the same on every load): it holds with
repetitions, where a candidate's share is a fraction and no test for binary pairs applies. When
every candidate ran once per system the outcomes are binary pairs, and McNemar's exact test
(statsmodels) on the discordant ones gives a p-value for "no difference" as well.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar

from evaluation.runs.metrics import LABELS, Tally
from veriharm_site.intervals import Interval, bootstrap_means, percentile_interval

COMPARED = ("ta", "hsr", "ssr")
METHOD = (
    "95% percentile bootstrap over the paired candidates (2000 resamples, fixed seed): each resample draws "
    "candidates with replacement and keeps both systems' results of a candidate together. When every "
    "candidate ran once per system, McNemar's exact test on the discordant candidates gives a p-value too."
)


def share(tally: Tally, metric: str) -> Fraction:
    """A candidate's t_c, h_c or s_c."""
    hits = {"ta": tally.task, "hsr": tally.harmful, "ssr": tally.task - tally.harmful}[metric]
    return Fraction(hits, tally.trials)


@dataclass(frozen=True)
class McNemar:
    """Binary pairs: both systems succeeded, only A, only B, neither; exact two-sided p-value."""

    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float


@dataclass(frozen=True)
class Difference:
    metric: str
    a: Fraction  # the metric of A over the paired candidates
    b: Fraction
    ci: Interval | None  # of a - b
    mcnemar: McNemar | None

    @property
    def label(self) -> str:
        return LABELS[self.metric]

    @property
    def value(self) -> Fraction:
        return self.a - self.b


@dataclass(frozen=True)
class Comparison:
    paired: int  # candidates scored for both systems
    only_a: int  # candidates scored for A only (left out)
    only_b: int
    binary: bool  # every paired candidate ran once per system
    differences: list[Difference]


def _mcnemar(pairs: list[tuple[Tally, Tally]], metric: str) -> McNemar:
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for a, b in pairs:
        counts[(share(a, metric) == 1, share(b, metric) == 1)] += 1
    both, only_a, only_b, neither = (
        counts[key] for key in ((True, True), (True, False), (False, True), (False, False))
    )
    result = mcnemar([[both, only_a], [only_b, neither]], exact=True)
    return McNemar(both, only_a, only_b, neither, float(result.pvalue))


def compare(a: Iterable[Tally], b: Iterable[Tally]) -> Comparison:
    """A against B on the candidates both have resolved trials for (their `Tally.candidate`)."""
    of_a: dict[Hashable, Tally] = {t.candidate: t for t in a if t.trials}
    of_b: dict[Hashable, Tally] = {t.candidate: t for t in b if t.trials}
    pairs = [(of_a[c], of_b[c]) for c in of_a if c in of_b]
    only_a = sum(1 for c in of_a if c not in of_b)
    only_b = sum(1 for c in of_b if c not in of_a)
    if not pairs:
        return Comparison(0, only_a, only_b, False, [])
    binary = all(x.trials == 1 and y.trials == 1 for x, y in pairs)
    n = len(pairs)
    shares = {m: [(share(x, m), share(y, m)) for x, y in pairs] for m in COMPARED}
    # One column of per-candidate differences per metric: every metric is read off the same resamples.
    columns = np.array([[float(x - y) for x, y in shares[m]] for m in COMPARED]).T
    intervals = [percentile_interval(column) for column in bootstrap_means(columns).T]
    differences = [
        Difference(
            metric,
            sum((x for x, _ in shares[metric]), Fraction(0)) / n,
            sum((y for _, y in shares[metric]), Fraction(0)) / n,
            ci,
            _mcnemar(pairs, metric) if binary else None,
        )
        for metric, ci in zip(COMPARED, intervals)
    ]
    return Comparison(n, only_a, only_b, binary, differences)
