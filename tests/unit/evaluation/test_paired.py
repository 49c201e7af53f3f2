"""Paired differences of two systems against hand computations (pure)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from evaluation.runs.metrics import Tally
from evaluation.runs.paired import compare


def tally(candidate, results):
    """A candidate's trials as (r_task, r_harm) pairs."""
    return Tally(
        candidate=candidate,
        trials=len(results),
        task=sum(t for t, _ in results),
        harmful=sum(t * h for t, h in results),
        harm=sum(h for _, h in results),
    )


# One trial per candidate and system. A: c1 harmful success, c2 and c3 safe successes, c4 failed.
# B: c1 and c3 safe successes, c2 and c4 failed. c5 was scored for A only, c6 for B only.
A = [tally("c1", [(1, 1)]), tally("c2", [(1, 0)]), tally("c3", [(1, 0)]), tally("c4", [(0, 0)]), tally("c5", [(1, 1)])]
B = [tally("c1", [(1, 0)]), tally("c2", [(0, 0)]), tally("c3", [(1, 0)]), tally("c4", [(0, 0)]), tally("c6", [(0, 0)])]


def test_differences_are_over_the_paired_candidates_only():
    c = compare(A, B)
    assert (c.paired, c.only_a, c.only_b, c.binary) == (4, 1, 1, True)
    d = {x.metric: x for x in c.differences}
    # TA: A 3/4, B 2/4; HSR: A 1/4, B 0; SSR: A 2/4 (c2, c3), B 2/4 (c1, c3).
    assert (d["ta"].a, d["ta"].b, d["ta"].value) == (Fraction(3, 4), Fraction(1, 2), Fraction(1, 4))
    assert (d["hsr"].a, d["hsr"].b, d["hsr"].value) == (Fraction(1, 4), 0, Fraction(1, 4))
    assert (d["ssr"].a, d["ssr"].b, d["ssr"].value) == (Fraction(1, 2), Fraction(1, 2), 0)


def test_the_bootstrap_interval_resamples_candidates_as_pairs():
    d = {x.metric: x for x in compare(A, B).differences}
    # The TA differences per candidate are (0, 1, 0, 0): a resample's mean is k/4 with k ~ Bin(4, 1/4),
    # P(k <= 2) = 0.949 and P(k <= 3) = 0.996, so the 2.5% and 97.5% points are 0 and 3/4.
    assert (d["ta"].ci.low, d["ta"].ci.high) == (0.0, 0.75)
    # SSR: differences (-1, +1, 0, 0), so a resample's sum S is symmetric about 0 with
    # P(S = 4) = 1/256 = 0.004 and P(S = 3) = 4 (1/4)^3 (1/2) = 0.031: P(S >= 3) = 0.035 > 2.5%, so ±3/4.
    assert (d["ssr"].ci.low, d["ssr"].ci.high) == (-0.75, 0.75)
    # Differences of a system with itself are 0 on every resample.
    assert all((x.ci.low, x.ci.high) == (0.0, 0.0) for x in compare(A, A).differences)


def test_mcnemar_reads_the_discordant_candidates():
    d = {x.metric: x for x in compare(A, B).differences}
    # TA: both c1 and c3, only A c2, neither c4; one discordant pair: p = 1.
    ta = d["ta"].mcnemar
    assert (ta.both, ta.only_a, ta.only_b, ta.neither, ta.p_value) == (2, 1, 0, 1, 1.0)
    ssr = d["ssr"].mcnemar
    assert (ssr.both, ssr.only_a, ssr.only_b, ssr.neither) == (1, 1, 1, 1)
    # Six candidates A solves and B does not, none the other way: exact p = 2 / 2^6.
    a = [tally(i, [(1, 0)]) for i in range(8)]
    b = [tally(i, [(0 if i < 6 else 1, 0)]) for i in range(8)]
    ta = {x.metric: x for x in compare(a, b).differences}["ta"]
    assert (ta.mcnemar.only_a, ta.mcnemar.only_b, ta.mcnemar.p_value) == (6, 0, pytest.approx(2 / 64))
    # Differences (1 x 6, 0 x 2): a resample's mean is k/8 with k ~ Bin(8, 3/4), P(k <= 3) = 0.027,
    # P(k <= 2) = 0.004: the interval starts at 3/8, excluding 0 as McNemar's p < 0.05 does.
    assert (ta.ci.low, ta.ci.high) == (0.375, 1.0)


def test_repetitions_compare_shares_and_leave_mcnemar_out():
    a = [tally("x", [(1, 1), (1, 0)]), tally("y", [(1, 0), (1, 0)])]
    b = [tally("x", [(0, 0), (1, 0)]), tally("y", [(1, 0)])]
    c = compare(a, b)
    assert c.binary is False and all(x.mcnemar is None for x in c.differences)
    d = {x.metric: x for x in c.differences}
    # TA: A (1 + 1)/2 = 1, B (1/2 + 1)/2 = 3/4; HSR: A (1/2 + 0)/2 = 1/4, B 0.
    assert (d["ta"].value, d["hsr"].value, d["ssr"].value) == (Fraction(1, 4), Fraction(1, 4), 0)


def test_no_candidate_in_common_gives_no_difference():
    c = compare([tally("x", [(1, 0)])], [tally("y", [(1, 0)])])
    assert (c.paired, c.only_a, c.only_b, c.differences) == (0, 1, 1, [])
