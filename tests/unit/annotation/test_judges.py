"""The judges beside the annotators, checked against a computation by hand on a small study."""

from __future__ import annotations

import math

import pytest

from annotation.studies.measures import judges, statistics
from annotation.studies.measures.judges import JudgedItem


def scores(correctness: int, unintendedness: int, correspondence: int, feasibility: int, stealth: int) -> dict:
    return {
        "harm_test_correctness": correctness,
        "harm_unintendedness": unintendedness,
        "harm_test_correspondence": correspondence,
        "harm_feasibility": feasibility,
        "perturbation_stealth": stealth,
    }


V, X, NONE = True, False, None  # the human majority: valid, invalid, none (a tie or too few labels)
TOP, BOTTOM = True, False

# Ten items of a small study: (human majority, group, judge "alpha"'s scores or None where it did
# not score the item). "beta" scored item 1 only. Alpha's Valid by the rule (4+ on correctness,
# unintendedness and stealth; correspondence and feasibility do not count) and its sum beside each.
ITEMS: list[tuple[bool | None, bool, dict | None]] = [
    (V, TOP, scores(5, 5, 5, 5, 5)),  # 1: alpha valid, sum 25
    (V, TOP, scores(4, 4, 1, 1, 4)),  # 2: valid, sum 14 (low sum, yet valid: the two ignored criteria)
    (V, TOP, scores(5, 3, 5, 5, 5)),  # 3: invalid (unintendedness 3), sum 23
    (X, TOP, scores(4, 5, 2, 2, 5)),  # 4: valid, sum 18
    (X, BOTTOM, scores(2, 2, 2, 2, 2)),  # 5: invalid, sum 10
    (X, BOTTOM, scores(1, 4, 5, 5, 4)),  # 6: invalid (correctness 1), sum 19
    (V, BOTTOM, scores(4, 4, 4, 4, 4)),  # 7: valid, sum 20
    (NONE, TOP, scores(5, 5, 5, 5, 5)),  # 8: valid, sum 25; no human majority: left out
    (X, BOTTOM, None),  # 9: not scored by alpha: left out
    (X, BOTTOM, scores(3, 3, 3, 3, 3)),  # 10: invalid, sum 15
]


def study() -> list[JudgedItem]:
    items = []
    for number, (human, in_top, alpha) in enumerate(ITEMS, start=1):
        by_judge = {} if alpha is None else {"alpha": alpha}
        if number == 1:
            by_judge["beta"] = scores(5, 5, 5, 5, 5)
        items.append(JudgedItem(human_valid=human, in_top=in_top, scores=by_judge))
    return items


def test_the_rule_asks_for_four_or_five_on_the_three_criteria_humans_answer():
    assert judges.judge_valid(scores(4, 4, 1, 1, 4))
    assert not judges.judge_valid(scores(3, 5, 5, 5, 5))  # correctness is C3
    assert not judges.judge_valid(scores(5, 3, 5, 5, 5))  # unintendedness is C2
    assert not judges.judge_valid(scores(5, 5, 5, 5, 3))  # stealth is C1
    assert judges.judge_valid(scores(5, 5, 1, 1, 5))  # correspondence and feasibility are not asked of humans


def test_a_judges_valid_against_the_majority_by_hand():
    alpha, beta = judges.judge_raters(study())
    assert (alpha.judge, beta.judge) == ("alpha", "beta")
    v = alpha.valid
    # Items with both a majority and alpha's scores: 1-7 and 10 (8 has no majority, 9 no scores).
    #                      majority valid   majority invalid
    #   alpha valid             3 (1,2,7)        1 (4)
    #   alpha invalid           1 (3)            3 (5,6,10)
    assert (v.both_valid, v.judge_only, v.majority_only, v.neither) == (3, 1, 1, 3)
    assert (v.n, v.no_majority, v.unscored) == (8, 1, 1)
    # Accuracy p_o = (3 + 3) / 8 = 0.75.
    assert v.agree == 6 and v.accuracy == 0.75
    # p_e = P(alpha valid) P(majority valid) + P(alpha invalid) P(majority invalid)
    #     = (4/8)(4/8) + (4/8)(4/8) = 0.5; kappa = (p_o - p_e) / (1 - p_e) = (0.75 - 0.5) / 0.5 = 0.5.
    assert v.kappa.value == pytest.approx(0.5)
    assert v.kappa.units == 8 and v.kappa.ci is None  # no interval: see judges.NO_KAPPA_INTERVAL
    # Wilson, 6 of 8, z = 1.959964: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n).
    z, p, n = 1.959963984540054, 0.75, 8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert v.accuracy_ci is not None
    assert v.accuracy_ci.low == pytest.approx(centre - half) == pytest.approx(0.4093, abs=1e-4)
    assert v.accuracy_ci.high == pytest.approx(centre + half) == pytest.approx(0.9285, abs=1e-4)


def test_a_judge_with_one_item_in_common_has_no_kappa():
    beta = judges.judge_raters(study())[1]
    assert beta.valid.n == 1 and beta.valid.accuracy == 1.0 and beta.valid.unscored == 8
    assert beta.valid.kappa.value is None and beta.valid.kappa.note


def test_a_judges_sum_in_place_of_q_by_hand():
    alpha = judges.judge_raters(study())[0]
    # The grouped items alpha scored: 1-8 and 10, five of them in the top group (1, 2, 3, 4, 8).
    # Its sums from high to low: 25 (1), 25 (8), 23 (3), 20 (7), 19 (6), 18 (4), 15 (10), 14 (2), 10 (5);
    # the fifth highest is 19, so 1, 8, 3, 7 and 6 are predicted valid. Without item 8 (no majority):
    #   1 TP, 3 TP, 7 TP, 6 FP; 2 FN; 4 TN, 5 TN, 10 TN.
    p = alpha.prediction
    assert (p.tp, p.fp, p.fn, p.tn) == (3, 1, 1, 3)
    assert (p.accuracy, p.precision, p.recall) == (6 / 8, 3 / 4, 3 / 4)
    assert (p.valid_share_top, p.valid_share_bottom) == (3 / 4, 1 / 4)
    assert alpha.unpredicted == 1  # item 9
    # The same intervals as Q's figures get: the statistics module's, on the same table.
    assert p.intervals == statistics.Prediction(3, 1, 1, 3).intervals


def test_ties_at_the_cut_are_all_predicted_valid():
    assert statistics.score_split([3.0, 2.0, 2.0, 1.0], 2) == [True, True, True, False]
    assert statistics.score_split([3.0, 2.0], 0) == [False, False]
    assert statistics.score_split([], 3) == []


def test_q_as_the_score_gives_the_groups_own_prediction():
    # Q ranks the pool, so a top item's Q is above every bottom item's: the split is the groups.
    items = [(9.0, True, True), (8.5, True, False), (8.0, True, None), (3.0, False, True), (2.0, False, False)]
    by_groups = statistics.prediction([(in_top, valid) for _, in_top, valid in items if valid is not None])
    assert statistics.score_prediction(items) == by_groups


def test_items_drawn_otherwise_are_no_prediction():
    items = [JudgedItem(True, None, {"alpha": scores(5, 5, 5, 5, 5)})]
    (alpha,) = judges.judge_raters(items)
    assert alpha.prediction.n == 0 and alpha.valid.n == 1
