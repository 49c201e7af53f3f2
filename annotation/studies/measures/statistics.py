"""Agreement and prediction figures (pure: no database).

Fleiss' kappa and Cohen's kappa come from statsmodels, Krippendorff's alpha from the
krippendorff package; only percent agreement and the majority vote are counted here. The
shares carry 95% intervals (`veriharm_site.intervals`): Wilson for a share of k items in n,
the bootstrap over items (one item is one candidate; seeded) for Q's accuracy, precision and
recall as a predictor and for percent agreement, which are no share of independent draws of
one fixed n (precision's denominator is itself random).
A unit is one rated item: a mapping from rater to category (any hashable values); the pairwise
figures name their raters by the units' own rater type.
"""

from __future__ import annotations

import itertools
import warnings
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import krippendorff
import numpy as np
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from veriharm_site.intervals import Interval, bootstrap_means, percentile_interval, wilson

# Any rater type: the figures that name no rater need not know it.
Unit = Mapping[Any, Hashable]

# Landis and Koch (1977): upper bounds of each band; below 0 is "poor".
LANDIS_KOCH = ((0.0, "poor"), (0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"))


def landis_koch(value: float | None) -> str:
    if value is None:
        return "undefined"
    if value < 0:
        return "poor"
    for upper, band in LANDIS_KOCH[1:]:
        if value <= upper:
            return band
    return "almost perfect"


@dataclass(frozen=True)
class Coefficient:
    value: float | None
    units: int  # how many units it was computed on
    note: str = ""
    ci: Interval | None = None  # only where one is computed (percent agreement)

    @property
    def band(self) -> str:
        return landis_koch(self.value)


@dataclass(frozen=True)
class PairKappa[R: Hashable]:
    rater_a: R
    rater_b: R
    common: int
    kappa: Coefficient


def _finite(value: float) -> float | None:
    # Rounded past float noise, so that an exact 0 computed as -1e-16 is not banded "poor".
    return round(float(value), 12) + 0.0 if np.isfinite(value) else None


def _categories(units: Sequence[Unit]) -> list[Hashable]:
    return sorted({value for unit in units for value in unit.values()}, key=repr)


def fleiss_kappa(units: Sequence[Unit]) -> Coefficient:
    """Fleiss' kappa; every unit must have the same number of ratings (at least two)."""
    if not units:
        return Coefficient(None, 0, "no items rated by every annotator")
    sizes = {len(unit) for unit in units}
    if len(sizes) != 1 or min(sizes) < 2:
        raise ValueError(f"Fleiss' kappa needs the same number (>= 2) of ratings per unit, got {sorted(sizes)}")
    codes = {category: index for index, category in enumerate(_categories(units))}
    ratings = np.array([[codes[value] for value in unit.values()] for unit in units])
    counts, _ = aggregate_raters(ratings, n_cat=len(codes))
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = _finite(sm_fleiss_kappa(counts, method="fleiss"))
    return Coefficient(value, len(units), "" if value is not None else "undefined: every rating is the same")


def krippendorff_alpha(units: Sequence[Unit]) -> Coefficient:
    """Krippendorff's alpha for nominal data; raters may skip units (missing values)."""
    pairable = [unit for unit in units if len(unit) >= 2]
    if not pairable:
        return Coefficient(None, 0, "no item has two ratings yet")
    raters = sorted({rater for unit in pairable for rater in unit}, key=repr)
    codes = {category: float(index) for index, category in enumerate(_categories(pairable))}
    data = np.full((len(raters), len(pairable)), np.nan)
    row = {rater: index for index, rater in enumerate(raters)}
    for column, unit in enumerate(pairable):
        for rater, value in unit.items():
            data[row[rater], column] = codes[value]
    if len(codes) < 2:
        return Coefficient(None, len(pairable), "undefined: every rating is the same")
    value = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    return Coefficient(_finite(value), len(pairable))


def percent_agreement(units: Sequence[Unit]) -> Coefficient:
    """The share of agreeing rater pairs, averaged over units with two or more ratings."""
    shares = []
    for unit in units:
        values = list(unit.values())
        if len(values) < 2:
            continue
        pairs = list(itertools.combinations(values, 2))
        shares.append(sum(a == b for a, b in pairs) / len(pairs))
    if not shares:
        return Coefficient(None, 0, "no item has two ratings yet")
    ci = percentile_interval(bootstrap_means(np.array(shares)[:, None])[:, 0])
    return Coefficient(sum(shares) / len(shares), len(shares), ci=ci)


def pairwise_cohen[R: Hashable](units: Sequence[Mapping[R, Hashable]]) -> list[PairKappa[R]]:
    """Cohen's kappa for every pair of raters, on the units both rated."""
    categories = _categories(units)
    index = {category: i for i, category in enumerate(categories)}
    raters = sorted({rater for unit in units for rater in unit}, key=repr)
    result: list[PairKappa[R]] = []
    for a, b in itertools.combinations(raters, 2):
        table = np.zeros((len(categories), len(categories)))
        common = 0
        for unit in units:
            if a in unit and b in unit:
                table[index[unit[a]], index[unit[b]]] += 1
                common += 1
        if common < 2:
            result.append(PairKappa(a, b, common, Coefficient(None, common, "fewer than two items in common")))
            continue
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = _finite(cohens_kappa(table).kappa)
        note = "" if value is not None else "undefined: both gave one answer throughout"
        result.append(PairKappa(a, b, common, Coefficient(value, common, note)))
    return result


def majority(values: Sequence[bool], required: int) -> bool | None:
    """The majority of `required` votes, once more than half of them agree; None until then or on a tie."""
    yes = sum(1 for v in values if v)
    no = len(values) - yes
    if yes * 2 > required:
        return True
    if no * 2 > required:
        return False
    return None


@dataclass(frozen=True)
class Agreement[R: Hashable]:
    fleiss: Coefficient
    alpha: Coefficient
    percent: Coefficient
    pairs: list[PairKappa[R]] = field(default_factory=list)

    @property
    def mean_pairwise(self) -> Coefficient:
        values = [p.kappa.value for p in self.pairs if p.kappa.value is not None]
        if not values:
            return Coefficient(None, 0, "no pair with a defined kappa")
        return Coefficient(sum(values) / len(values), len(values), f"mean over {len(values)} pairs")


def agreement[R: Hashable](units: Sequence[Mapping[R, Hashable]], required: int) -> Agreement[R]:
    """All four measures; Fleiss' kappa on the units that have all `required` ratings."""
    complete = [unit for unit in units if len(unit) == required]
    if required < 2:
        fleiss = Coefficient(None, 0, "needs two or more annotators per item")
    else:
        fleiss = fleiss_kappa(complete)
    return Agreement(
        fleiss=fleiss,
        alpha=krippendorff_alpha(units),
        percent=percent_agreement(units),
        pairs=pairwise_cohen(units),
    )


@dataclass(frozen=True)
class Prediction:
    """The group as a binary predictor of Valid_agg (Figure 3): top = predicted valid."""

    tp: int  # top, valid
    fp: int  # top, invalid
    fn: int  # bottom, valid
    tn: int  # bottom, invalid

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @staticmethod
    def _ratio(num: int, den: int) -> float | None:
        return num / den if den else None

    @property
    def accuracy(self) -> float | None:
        return self._ratio(self.tp + self.tn, self.n)

    @property
    def precision(self) -> float | None:
        return self._ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return self._ratio(self.tp, self.tp + self.fn)

    @property
    def valid_share_top(self) -> float | None:
        return self._ratio(self.tp, self.tp + self.fp)

    @property
    def valid_share_bottom(self) -> float | None:
        return self._ratio(self.fn, self.fn + self.tn)

    @cached_property
    def intervals(self) -> PredictionIntervals:
        return prediction_intervals(self)


@dataclass(frozen=True)
class PredictionIntervals:
    """95% intervals of a Prediction's figures: bootstrap over the items for accuracy, precision and
    recall (Wilson where the figure is 0 or 1 and the bootstrap collapses to a point); Wilson for the
    share of valid items within the top and within the bottom group."""

    accuracy: Interval | None
    precision: Interval | None
    recall: Interval | None
    valid_share_top: Interval | None
    valid_share_bottom: Interval | None

    def as_dict(self) -> dict[str, float | None]:
        data: dict[str, float | None] = {}
        for name in ("accuracy", "precision", "recall", "valid_share_top", "valid_share_bottom"):
            interval: Interval | None = getattr(self, name)
            data[f"{name}_ci_low"] = None if interval is None else interval.low
            data[f"{name}_ci_high"] = None if interval is None else interval.high
        return data


def prediction_intervals(p: Prediction) -> PredictionIntervals:
    """Resampling the n items with replacement: one row per item of (correct, TP, predicted valid,
    valid), so that accuracy = mean correct, precision = mean TP / mean predicted valid, recall =
    mean TP / mean valid on every resample (undefined where its denominator is 0)."""
    top = p.tp + p.fp
    bottom = p.fn + p.tn
    shares = PredictionIntervals(None, None, None, wilson(p.tp, top), wilson(p.fn, bottom))
    if not p.n:
        return shares
    kinds = ((p.tp, (1, 1, 1, 1)), (p.fp, (0, 0, 1, 0)), (p.fn, (0, 0, 0, 1)), (p.tn, (1, 0, 0, 0)))
    rows = np.array([row for count, row in kinds for _ in range(count)], dtype=float)
    means = bootstrap_means(rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(means[:, 2] > 0, means[:, 1] / means[:, 2], np.nan)
        recall = np.where(means[:, 3] > 0, means[:, 1] / means[:, 3], np.nan)
    return PredictionIntervals(
        accuracy=_bootstrapped(means[:, 0], p.tp + p.tn, p.n),
        precision=_bootstrapped(precision, p.tp, top),
        recall=_bootstrapped(recall, p.tp, p.tp + p.fn),
        valid_share_top=shares.valid_share_top,
        valid_share_bottom=shares.valid_share_bottom,
    )


def _bootstrapped(values: np.ndarray, k: int, n: int) -> Interval | None:
    """The bootstrap interval of a figure k / n; at 0 or 1 every resample gives the figure itself, and
    a point would claim certainty n items cannot give, so there it is the Wilson interval of k of n."""
    if not n:
        return None
    if k in (0, n):
        return wilson(k, n)
    return percentile_interval(values)


def score_split(scores: Sequence[float], top: int) -> list[bool]:
    """Which of `scores` are predicted valid when a score ranks them as Q ranks the pool: the `top`
    highest, and any tied with the lowest of those (a tie has no order, so none of it is cut off)."""
    if top <= 0 or not scores:
        return [False] * len(scores)
    cut = sorted(scores, reverse=True)[min(top, len(scores)) - 1]
    return [score >= cut for score in scores]


def score_prediction(items: Sequence[tuple[float, bool, bool | None]]) -> Prediction:
    """Figure 3 with a score in place of Q: items are (score, in the top group, human valid or None).
    The score splits the items into as many predicted valid as the top group holds (`score_split`);
    the figures are over the items with a human verdict. With Q as the score, and no tie of Q across
    the two groups, this is the groups' own prediction."""
    predicted = score_split([score for score, _, _ in items], sum(1 for _, in_top, _ in items if in_top))
    return prediction(
        [(guess, valid) for guess, (_, _, valid) in zip(predicted, items, strict=True) if valid is not None]
    )


def prediction(outcomes: Sequence[tuple[bool, bool]]) -> Prediction:
    """From (predicted valid, human valid) pairs."""
    counts = Counter(outcomes)
    return Prediction(
        tp=counts[(True, True)], fp=counts[(True, False)], fn=counts[(False, True)], tn=counts[(False, False)]
    )
