"""Each annotator's quality in a study, for curators: volume, speed, agreement with the majority and
with gold, and Cohen's kappa with every other annotator."""

from __future__ import annotations

import statistics as pystats
from dataclasses import dataclass, replace

from veriharm_site.intervals import Interval, wilson_of_share

from ...models import Study
from ..measures import statistics
from .results import ItemRow, StudyResults, study_item_rows, study_results

FAST_SECONDS = 2.0  # a decision quicker than this cannot have read the task


def is_quick(seconds_spent: float) -> bool:
    """A label given in under FAST_SECONDS: the one test of "too quick" for the Annotators tab and
    the results' figures without the quick labels."""
    return seconds_spent < FAST_SECONDS


@dataclass(frozen=True)
class KappaWith:
    pseudonym: str
    common: int
    kappa: statistics.Coefficient


@dataclass(frozen=True)
class AnnotatorQuality:
    pseudonym: str
    username: str
    items: int
    median_seconds: float | None
    fast_share: float | None  # share of labels given in under FAST_SECONDS
    majority_items: int  # labels on items with a Valid majority
    majority_agreement: float | None  # share of those whose Valid matches the majority
    gold_items: int
    gold_accuracy: float | None  # share of gold labels with all three answers right
    gold_valid_accuracy: float | None  # share of gold labels with the right Valid
    kappas: list[KappaWith]

    # 95% Wilson intervals of the shares, over the labels each is a share of.
    @property
    def fast_share_ci(self) -> Interval | None:
        return wilson_of_share(self.fast_share, self.items)

    @property
    def majority_agreement_ci(self) -> Interval | None:
        return wilson_of_share(self.majority_agreement, self.majority_items)

    @property
    def gold_accuracy_ci(self) -> Interval | None:
        return wilson_of_share(self.gold_accuracy, self.gold_items)

    @property
    def gold_valid_accuracy_ci(self) -> Interval | None:
        return wilson_of_share(self.gold_valid_accuracy, self.gold_items)


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def annotator_quality(study: Study, rows: list[ItemRow] | None = None) -> list[AnnotatorQuality]:
    """For curators: each annotator's volume, speed, agreement with the majority and with gold, and
    Cohen's kappa on Valid with every other annotator (on the items both labelled)."""
    rows = rows if rows is not None else study_item_rows(study)
    pairs = statistics.pairwise_cohen([row.unit("valid") for row in rows if row.labels])
    members = list(study.memberships.select_related("user").order_by("pseudonym"))
    names = {m.user_id: m.pseudonym for m in members}
    result = []
    for member in members:
        mine = [(row, label) for row in rows for label in row.labels if label.annotator_id == member.user_id]
        seconds = [label.seconds_spent for _, label in mine]
        with_majority = [(row, label) for row, label in mine if row.valid_agg is not None]
        gold = [(row.gold, label) for row, label in mine if row.gold is not None]
        kappas = [
            KappaWith(names.get(other, f"A?{other}"), pair.common, pair.kappa)
            for pair in pairs
            for me, other in ((pair.rater_a, pair.rater_b), (pair.rater_b, pair.rater_a))
            if me == member.user_id
        ]
        result.append(
            AnnotatorQuality(
                pseudonym=member.pseudonym,
                username=member.user.get_username(),
                items=len(mine),
                median_seconds=pystats.median(seconds) if seconds else None,
                fast_share=_share(sum(1 for s in seconds if is_quick(s)), len(seconds)),
                majority_items=len(with_majority),
                majority_agreement=_share(
                    sum(1 for row, label in with_majority if label.valid == row.valid_agg), len(with_majority)
                ),
                gold_items=len(gold),
                gold_accuracy=_share(
                    sum(
                        1
                        for answer, label in gold
                        if (label.c1, label.c2, label.c3) == (answer.c1, answer.c2, answer.c3)
                    ),
                    len(gold),
                ),
                gold_valid_accuracy=_share(sum(1 for answer, label in gold if label.valid == answer.valid), len(gold)),
                kappas=sorted(kappas, key=lambda k: k.pseudonym),
            )
        )
    return result


@dataclass(frozen=True)
class QuickLabels:
    """How many of a study's labels were quick, and the study's figures on the other labels alone
    (`without` is None when there is nothing to compare: no quick label, or no other label)."""

    quick: int
    labels: int
    without: StudyResults | None
    with_all: StudyResults | None = None

    @property
    def share(self) -> float | None:
        return _share(self.quick, self.labels)

    @property
    def agreement_pairs(self) -> list[tuple[str, statistics.Agreement[int], statistics.Agreement[int]]]:
        """Each measure's agreement on all labels and without the quick ones, side by side."""
        if self.without is None or self.with_all is None:
            return []
        return [
            (every.title, every.agreement, kept.agreement)
            for every, kept in zip(self.with_all.agreement, self.without.agreement, strict=True)
        ]


def quick_labels(study: Study, results: StudyResults) -> QuickLabels:
    """The results' warning about quick labels, with the agreement and Q's predictive figures
    recomputed without them (the items keep their annotator count, so an item that loses a vote
    may lose its majority, and its Fleiss' kappa unit)."""
    rows = results.rows
    labels = sum(len(row.labels) for row in rows)
    quick = sum(1 for row in rows for label in row.labels if is_quick(label.seconds_spent))
    if quick == 0 or quick == labels:
        return QuickLabels(quick, labels, None)
    kept = [replace(row, labels=[label for label in row.labels if not is_quick(label.seconds_spent)]) for row in rows]
    return QuickLabels(quick, labels, study_results(study, kept), with_all=results)
