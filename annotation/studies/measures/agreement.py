"""The agreement policy of a study (pure: no database): which statistic each figure is computed on,
for the study's routing, and the sentence the results page and the export print about it."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace

from . import statistics

FIXED_DESIGN = (
    "Every item takes the same number of annotators: Fleiss' kappa on the items with all {n} labels; "
    "Krippendorff's alpha, percent agreement and Cohen's kappa on every item with two or more labels."
)
TWO_PLUS_ONE_DESIGN = (
    "2+1 routing: every item gets two labels and a third only when the first two disagree, so items have "
    "unequal numbers of raters. Fleiss' kappa (equal raters only) is computed on the first two labels of each "
    "item, the round every item gets; Krippendorff's alpha, which allows missing ratings, on all labels; "
    "percent agreement and Cohen's kappa on all labels too. The third labels exist only where the first two "
    "disagreed, so the figures on all labels understate agreement."
)


def design(*, two_plus_one: bool, annotators_per_item: int) -> str:
    """What the agreement figures are computed on, in words."""
    return TWO_PLUS_ONE_DESIGN if two_plus_one else FIXED_DESIGN.format(n=annotators_per_item)


def measure_agreement[R: Hashable](
    units: Sequence[Mapping[R, Hashable]],
    first_round: Sequence[Mapping[R, Hashable]],
    *,
    two_plus_one: bool,
    annotators_per_item: int,
) -> statistics.Agreement[R]:
    """The agreement on one measure: `units` every labelled item's labels, `first_round` the first
    two labels of each item with two or more. Under 2+1 routing Fleiss' kappa, which needs equal
    raters, is taken on the first round only, and the rest on all labels of two raters or more."""
    if not two_plus_one:
        return statistics.agreement(units, annotators_per_item)
    return replace(statistics.agreement(units, 2), fleiss=statistics.fleiss_kappa(first_round))
