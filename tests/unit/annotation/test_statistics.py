"""Agreement and prediction figures against published reference values."""

import itertools
import math

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from annotation.studies.measures import statistics

# Fleiss (1971) as tabulated in the classic example: 10 subjects, 14 raters, counts per category 1-5.
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 coders, 12 units,
# None where a coder gave no value.
KRIPPENDORFF = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
}


def fleiss_units() -> list[dict[int, int]]:
    """The counts table as raw ratings: each subject rated by raters 0..13."""
    units = []
    for counts in FLEISS_COUNTS:
        ratings = [category for category, n in enumerate(counts, start=1) for _ in range(n)]
        units.append(dict(enumerate(ratings)))
    return units


def krippendorff_units() -> list[dict[str, int]]:
    return [{coder: values[u] for coder, values in KRIPPENDORFF.items() if values[u] is not None} for u in range(12)]


def test_fleiss_kappa_of_the_classic_example_is_0_210():
    kappa = statistics.fleiss_kappa(fleiss_units())
    assert kappa.value == pytest.approx(0.210, abs=5e-4)
    assert kappa.units == 10
    assert kappa.band == "fair"  # 0.2099: just above the 0.20 edge of "slight"


def test_krippendorff_nominal_alpha_of_the_reliability_example_is_0_743():
    alpha = statistics.krippendorff_alpha(krippendorff_units())
    assert alpha.value == pytest.approx(0.743, abs=5e-4)
    # Unit 12 has a single value and is not pairable; the other 11 count.
    assert alpha.units == 11
    assert alpha.band == "substantial"


def test_the_papers_configuration_gives_88_84_91():
    # 21 of 25 top items valid, 2 of 25 bottom items valid; top = predicted valid.
    outcomes = [(True, True)] * 21 + [(True, False)] * 4 + [(False, True)] * 2 + [(False, False)] * 23
    p = statistics.prediction(outcomes)
    assert (p.tp, p.fp, p.fn, p.tn) == (21, 4, 2, 23)
    assert round(p.accuracy * 100) == 88
    assert round(p.precision * 100) == 84
    assert round(p.recall * 100) == 91
    assert p.valid_share_top == pytest.approx(0.84)
    assert p.valid_share_bottom == pytest.approx(0.08)


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (-0.1, "poor"),
        (0.0, "slight"),
        (0.2, "slight"),
        (0.21, "fair"),
        (0.41, "moderate"),
        (0.61, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
        (None, "undefined"),
    ],
)
def test_landis_koch_bands(value, band):
    assert statistics.landis_koch(value) == band


def test_percent_agreement_is_the_mean_share_of_agreeing_pairs():
    units = [{"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 1, "c": 0}, {"a": 1}]
    # Unit 1: 3 of 3 pairs agree; unit 2: 1 of 3; unit 3 has one rating and does not count.
    result = statistics.percent_agreement(units)
    assert result.value == pytest.approx((1 + 1 / 3) / 2)
    assert result.units == 2


def test_pairwise_cohen_matches_statsmodels_on_each_pairs_common_items():
    units = [
        {"a": True, "b": True, "c": False},
        {"a": False, "b": False, "c": False},
        {"a": True, "b": False, "c": True},
        {"a": True, "b": True},
        {"b": False, "c": False},
    ]
    pairs = {(p.rater_a, p.rater_b): p for p in statistics.pairwise_cohen(units)}
    assert set(pairs) == {("a", "b"), ("a", "c"), ("b", "c")}
    for (x, y), pair in pairs.items():
        table = np.zeros((2, 2))
        common = [u for u in units if x in u and y in u]
        for u in common:
            table[int(u[x]), int(u[y])] += 1
        assert pair.common == len(common)
        expected = cohens_kappa(table).kappa
        if math.isfinite(expected):
            assert pair.kappa.value == pytest.approx(expected)
        else:
            assert pair.kappa.value is None


def test_undefined_coefficients_say_why():
    same = [{"a": True, "b": True, "c": True}] * 4
    assert statistics.fleiss_kappa(same).value is None
    assert "same" in statistics.fleiss_kappa(same).note
    assert statistics.krippendorff_alpha(same).value is None
    assert statistics.percent_agreement(same).value == 1.0
    assert statistics.fleiss_kappa([]).value is None
    with pytest.raises(ValueError, match="same number"):
        statistics.fleiss_kappa([{"a": 1, "b": 1}, {"a": 1, "b": 0, "c": 1}])


def test_fleiss_in_agreement_uses_only_complete_items():
    units = [{"a": 1, "b": 1, "c": 1}, {"a": 0, "b": 0, "c": 1}, {"a": 1, "b": 0}]
    result = statistics.agreement(units, required=3)
    assert result.fleiss.units == 2
    assert result.alpha.units == 3
    assert result.fleiss.value == pytest.approx(statistics.fleiss_kappa(units[:2]).value)


@pytest.mark.parametrize(
    ("votes", "required", "expected"),
    [
        ([True, True, False], 3, True),
        ([False, False, True], 3, False),
        ([True, True], 3, True),  # already more than half of three
        ([True, False], 3, None),  # the third vote decides
        ([True, False], 2, None),  # a tie
        ([], 3, None),
    ],
)
def test_majority_needs_more_than_half_of_the_required_votes(votes, required, expected):
    assert statistics.majority(votes, required) is expected


def test_prediction_of_every_combination():
    p = statistics.prediction(list(itertools.product([True, False], repeat=2)))
    assert (p.tp, p.fp, p.fn, p.tn, p.n) == (1, 1, 1, 1, 4)
    assert p.accuracy == 0.5
    assert statistics.prediction([]).accuracy is None


def test_float_noise_around_zero_is_not_banded_poor():
    # Yes-votes 0, 2, 2, 2 of 3: observed and expected agreement are equal, and statsmodels'
    # division leaves -1.1e-16, which must read as 0 ("slight"), not as a negative kappa ("poor").
    units = [dict(zip("abc", [True] * yes + [False] * (3 - yes))) for yes in (0, 2, 2, 2)]
    kappa = statistics.fleiss_kappa(units)
    assert kappa.value == 0.0 and kappa.band == "slight"


def test_prediction_intervals_against_hand_computations():
    from tests.unit.test_intervals import hand_wilson

    # n = 22 items: TP 9, FP 2, FN 3, TN 8. Accuracy 17/22: a resample's accuracy is k/22 with
    # k ~ Bin(22, 17/22), whose cdf is 0.0154 at 12 and 0.0436 at 13, 0.9743 at 20 and 0.9966 at 21:
    # the 2.5% and 97.5% points are 13/22 and 21/22.
    p = statistics.Prediction(tp=9, fp=2, fn=3, tn=8)
    ci = p.intervals
    assert (ci.accuracy.low, ci.accuracy.high) == pytest.approx((13 / 22, 21 / 22))
    # Precision 9/11 and recall 9/12 lie inside their intervals, which stay within 0..1.
    assert ci.precision.low < 9 / 11 < ci.precision.high <= 1 and ci.recall.low < 9 / 12 < ci.recall.high <= 1
    # The valid shares within each group are Wilson intervals: 9 of 11 in the top, 3 of 11 in the bottom.
    assert (ci.valid_share_top.low, ci.valid_share_top.high) == pytest.approx(hand_wilson(9, 11))
    assert (ci.valid_share_bottom.low, ci.valid_share_bottom.high) == pytest.approx(hand_wilson(3, 11))
    # The same every time (seeded), and in the API's field names.
    assert statistics.Prediction(tp=9, fp=2, fn=3, tn=8).intervals == ci
    assert ci.as_dict()["accuracy_ci_low"] == ci.accuracy.low


def test_a_perfect_predictor_still_gets_an_interval_of_its_n():
    from tests.unit.test_intervals import hand_wilson

    # 22 of 22 right: every resample says 100%, a point; the Wilson interval of 22 of 22 says what 22 items can.
    ci = statistics.Prediction(tp=11, fp=0, fn=0, tn=11).intervals
    assert (ci.accuracy.low, ci.accuracy.high) == pytest.approx(hand_wilson(22, 22))
    assert (ci.precision.low, ci.precision.high) == pytest.approx(hand_wilson(11, 11))
    assert (ci.valid_share_bottom.low, ci.valid_share_bottom.high) == pytest.approx(hand_wilson(0, 11))
    assert ci.accuracy.low < 0.86 and ci.valid_share_bottom.high > 0.25
    # Nothing predicted valid: precision is undefined, and so is its interval.
    empty_top = statistics.Prediction(tp=0, fp=0, fn=3, tn=5).intervals
    assert empty_top.precision is None and empty_top.valid_share_top is None
    assert statistics.Prediction(0, 0, 0, 0).intervals.accuracy is None


def test_percent_agreement_has_a_bootstrap_interval_over_items():
    units = [{"a": 1, "b": 1}, {"a": 1, "b": 0}, {"a": 0, "b": 0}, {"a": 1, "b": 1}]
    result = statistics.percent_agreement(units)
    # Item shares (1, 0, 1, 1): a resample's mean is k/4 with k ~ Bin(4, 3/4): P(k <= 1) = 0.051 and
    # P(k = 0) = 0.004, so the 2.5% point is 1/4; the 97.5% point is 1.
    assert result.value == 0.75 and (result.ci.low, result.ci.high) == (0.25, 1.0)
