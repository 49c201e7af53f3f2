"""Study results for curators and viewers: the studies' summaries, each item with its labels,
majorities, adjudication and flags, the agreement and prediction figures, and the items beside the
harm tests' own verdicts (where the reader may see evaluation results).

User names appear only where the caller asks for them (`member_rows(usernames=...)`, the views
decide by permission); annotators never reach these reads.
"""

from __future__ import annotations

import statistics as pystats
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from candidates.hooks.harm_test_verdicts import HarmTestVerdict, harm_test_verdicts_for
from candidates.models import Candidate, Judgement
from candidates.pool.selectors import candidate_judge_scores
from veriharm_site.any_of import AnyOf

from ...labelling.criteria import MEASURES
from ...models import Adjudication, Assignment, Group, ItemSkip, Routing, Study, StudyItem, StudyMember
from ..measures import agreement as agreement_policy
from ..measures import judges, statistics


def _count_per_study(rows: QuerySet) -> Coalesce:
    """The number of `rows` of the outer study, as a correlated subquery: three counts joined in one
    grouped query would multiply items by labels by members before counting them apart."""
    counted = rows.filter(study=OuterRef("pk")).order_by().values("study").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def study_summaries() -> QuerySet[Study]:
    return Study.objects.annotate(
        n_items=_count_per_study(StudyItem.objects.all()),
        n_labels=_count_per_study(Assignment.objects.filter(submitted_at__isnull=False)),
        n_members=_count_per_study(StudyMember.objects.all()),
    ).select_related("created_by")


@dataclass(frozen=True)
class StratumRow:
    group: str
    name: str
    pool: int
    quota: float
    allocated: int
    realised: int


def strata_rows(study: Study) -> list[StratumRow]:
    """The sampler's allocation beside the items the study really holds, per group and stratum."""
    realised = {
        (row["group"], row["stratum"]): row["n"]
        for row in study.items.values("group", "stratum").annotate(n=Count("pk"))
    }
    rows = []
    for group in Group.values:
        for stratum in study.strata_report.get("groups", {}).get(group, {}).get("strata", []):
            rows.append(
                StratumRow(
                    group,
                    stratum["name"],
                    stratum["pool"],
                    stratum["quota"],
                    stratum["allocated"],
                    realised.get((group, stratum["name"]), 0),
                )
            )
    return rows


@dataclass(frozen=True)
class MemberRow:
    username: str
    pseudonym: str
    done: int
    claimed: bool


def member_rows(study: Study, *, usernames: bool = True) -> list[MemberRow]:
    """Each annotator's progress; without `usernames` (readers who do not manage studies) the
    user names are left empty and only pseudonyms say who is who."""
    counts: dict[int, Mapping[str, Any]] = {
        row["annotator_id"]: row
        for row in study.assignments.values("annotator_id").annotate(
            done=Count("pk", filter=Q(submitted_at__isnull=False)),
            claimed=Count("pk", filter=Q(submitted_at__isnull=True, expires_at__gt=timezone.now())),
        )
    }
    return [
        MemberRow(
            m.user.get_username() if usernames else "",
            m.pseudonym,
            counts.get(m.user_id, {}).get("done", 0),
            bool(counts.get(m.user_id, {}).get("claimed", 0)),
        )
        for m in study.memberships.select_related("user").order_by("pseudonym")
    ]


@dataclass(frozen=True)
class Answers:
    c1: bool
    c2: bool
    c3: bool

    @property
    def valid(self) -> bool:
        return self.c1 and self.c2 and self.c3

    def value(self, measure: str) -> bool:
        return self.valid if measure == "valid" else getattr(self, measure)


@dataclass(frozen=True)
class AdjudicationView:
    answers: Answers
    reason: str
    decided_by: str
    decided_at: datetime


@dataclass(frozen=True)
class FlagView:
    pseudonym: str
    reason: str
    flagged_at: datetime


@dataclass(frozen=True)
class LabelRow:
    annotator_id: int
    pseudonym: str
    username: str
    c1: bool
    c2: bool
    c3: bool
    comment: str
    seconds_spent: float
    submitted_at: datetime
    updated_at: datetime | None
    revisions: int

    @property
    def valid(self) -> bool:
        return self.c1 and self.c2 and self.c3

    def value(self, measure: str) -> bool:
        return self.valid if measure == "valid" else getattr(self, measure)


@dataclass
class ItemRow:
    """One study item for curators: its labels, their majorities and where it came from.

    `candidate_pk` lets other apps join their own per-candidate data (e.g. evaluation results)."""

    item_pk: int
    number: int
    candidate_pk: int
    candidate_external_id: str
    group: str
    rank: int
    quality: float
    stratum: str
    edited_since_sampling: bool
    required: int
    source_task: str = ""  # the source task's id, which the results table searches
    labels: list[LabelRow] = field(default_factory=list)
    gold: Answers | None = None
    adjudication: AdjudicationView | None = None
    flags: list[FlagView] = field(default_factory=list)

    @property
    def predicted_valid(self) -> bool:
        return self.group == Group.TOP

    @property
    def median_seconds(self) -> float | None:
        """The median active time the annotators spent on this item."""
        return pystats.median([label.seconds_spent for label in self.labels]) if self.labels else None

    @property
    def first_two(self) -> list[LabelRow]:
        """The first two labels by submission time: under 2+1 routing, the round every item gets."""
        return sorted(self.labels, key=lambda label: label.submitted_at)[:2]

    def final(self, measure: str) -> bool | None:
        """The adjudicated answer where a curator set one, the majority otherwise."""
        if self.adjudication is not None:
            return self.adjudication.answers.value(measure)
        return self.majority(measure)

    def yes(self, measure: str) -> int:
        return sum(1 for label in self.labels if label.value(measure))

    def majority(self, measure: str) -> bool | None:
        # A gold item has a label from every annotator, more than the study's count: the majority
        # is then of all its labels.
        return statistics.majority(
            [label.value(measure) for label in self.labels], max(self.required, len(self.labels))
        )

    @property
    def valid_agg(self) -> bool | None:
        return self.majority("valid")

    @property
    def criteria_yes_valid_no(self) -> bool:
        """Every criterion has a yes majority, yet Valid_agg is no: right, as Valid_agg is the
        majority of each annotator's own C1 and C2 and C3 (annotators who each reject a different
        criterion), but it reads as a contradiction unless the page says so."""
        return self.valid_agg is False and all(self.majority(key) for key in ("c1", "c2", "c3"))

    @property
    def majorities(self) -> dict[str, bool | None]:
        return {measure: self.majority(measure) for measure, _ in MEASURES}

    @property
    def splits(self) -> dict[str, tuple[int, int]]:
        return {measure: (self.yes(measure), len(self.labels) - self.yes(measure)) for measure, _ in MEASURES}

    @property
    def complete(self) -> bool:
        return len(self.labels) >= self.required

    @property
    def disagreement(self) -> float:
        """1 - mean pairwise agreement, averaged over Valid and the three criteria (0 = unanimous)."""
        if len(self.labels) < 2:
            return 0.0
        shares: list[float] = []
        for measure, _ in MEASURES:
            share = statistics.percent_agreement(
                [{i: label.value(measure) for i, label in enumerate(self.labels)}]
            ).value
            assert share is not None  # defined on two or more labels
            shares.append(share)
        return 1.0 - sum(shares) / len(shares)

    @property
    def comments(self) -> list[LabelRow]:
        return [label for label in self.labels if label.comment]

    def unit(self, measure: str) -> dict[int, bool]:
        return {label.annotator_id: label.value(measure) for label in self.labels}


def _gold_answers(item: StudyItem) -> Answers | None:
    # All three or none (item_gold_all_or_none): this is item.is_gold.
    if item.gold_c1 is None or item.gold_c2 is None or item.gold_c3 is None:
        return None
    return Answers(item.gold_c1, item.gold_c2, item.gold_c3)


def _label_row(a: Assignment, pseudonym: str, username: str) -> LabelRow:
    # A submitted assignment has its answers (assignment_submitted_has_answers).
    assert a.c1 is not None and a.c2 is not None and a.c3 is not None and a.submitted_at is not None
    return LabelRow(
        a.annotator_id,
        pseudonym,
        username,
        a.c1,
        a.c2,
        a.c3,
        a.comment,
        a.seconds_spent,
        a.submitted_at,
        a.updated_at,
        a.revisions,
    )


def study_item_rows(study: Study) -> list[ItemRow]:
    """Every item of the study with its submitted labels, by item number (three queries)."""
    return _item_rows(study, study.items.all())


def _item_rows(study: Study, items: QuerySet[StudyItem]) -> list[ItemRow]:
    return _item_rows_by_study({study.pk: study}, items).get(study.pk, [])


def _item_rows_by_study(studies: dict[int, Study], items: QuerySet[StudyItem]) -> dict[int, list[ItemRow]]:
    """The rows of these items (of these studies), by study and item number: the same five
    queries for one study or many."""
    members = {
        (m.study_id, m.user_id): (m.pseudonym, m.user.get_username())
        for m in StudyMember.objects.filter(study_id__in=list(studies)).select_related("user")
    }
    study_of: dict[int, int] = {}
    rows: dict[int, ItemRow] = {}
    for item in (
        items.filter(study_id__in=list(studies))
        .select_related("candidate__source_task")
        .only(
            "number",
            "group",
            "stratum",
            "rank_at_sampling",
            "quality_at_sampling",
            "revision_at_sampling",
            "candidate_id",
            "candidate__external_id",
            "candidate__revision",
            "candidate__source_task__external_id",
            "study_id",
            "gold_c1",
            "gold_c2",
            "gold_c3",
        )
        .order_by("study_id", "number")
    ):
        study_of[item.pk] = item.study_id
        rows[item.pk] = ItemRow(
            item_pk=item.pk,
            number=item.number,
            candidate_pk=item.candidate_id,
            candidate_external_id=item.candidate.external_id,
            group=item.group,
            rank=item.rank_at_sampling,
            quality=item.quality_at_sampling,
            stratum=item.stratum,
            edited_since_sampling=item.candidate.revision != item.revision_at_sampling,
            required=studies[item.study_id].annotators_per_item,
            source_task=item.candidate.source_task.external_id,
            gold=_gold_answers(item),
        )

    def member(study_id: int, annotator_id: int) -> tuple[str, str]:
        return members.get((study_id, annotator_id), (f"A?{annotator_id}", ""))

    for adj in Adjudication.objects.filter(item_id__in=list(rows)).select_related("decided_by"):
        rows[adj.item_id].adjudication = AdjudicationView(
            Answers(adj.c1, adj.c2, adj.c3),
            adj.reason,
            adj.decided_by.get_username() if adj.decided_by else "",
            adj.decided_at,
        )
    for skip in ItemSkip.objects.filter(item_id__in=list(rows), unclear=True).order_by("skipped_at"):
        rows[skip.item_id].flags.append(
            FlagView(member(study_of[skip.item_id], skip.annotator_id)[0], skip.reason, skip.skipped_at)
        )
    labels = Assignment.objects.filter(
        study_id__in=list(studies), submitted_at__isnull=False, item_id__in=list(rows)
    ).order_by("submitted_at", "pk")
    for a in labels:
        pseudonym, username = member(study_of[a.item_id], a.annotator_id)
        rows[a.item_id].labels.append(_label_row(a, pseudonym, username))
    by_study: dict[int, list[ItemRow]] = {pk: [] for pk in studies}
    for item_pk, row in rows.items():
        row.labels.sort(key=lambda label: label.pseudonym)
        if studies[study_of[item_pk]].routing == Routing.TWO_PLUS_ONE:
            first = row.first_two
            disagree = len(first) == 2 and (first[0].c1, first[0].c2, first[0].c3) != (
                first[1].c1,
                first[1].c2,
                first[1].c3,
            )
            row.required = 3 if disagree else 2
        by_study[study_of[item_pk]].append(row)
    return by_study


def candidate_item_rows(candidate_id: int) -> list[tuple[Study, ItemRow]]:
    """The human verdicts on one candidate: its item row in every study that sampled it, newest
    study first (the same queries however many studies sampled it)."""
    studies = {study.pk: study for study in Study.objects.filter(items__candidate_id=candidate_id).distinct()}
    rows = _item_rows_by_study(studies, StudyItem.objects.filter(candidate_id=candidate_id))
    return [(studies[pk], row) for pk in sorted(studies, reverse=True) for row in rows[pk]]


def candidates_item_rows(candidate_ids: list[int]) -> list[tuple[Study, ItemRow]]:
    """`candidate_item_rows` of many candidates at once, newest study first: the same queries."""
    items = StudyItem.objects.filter(AnyOf("candidate_id", candidate_ids))
    studies = {study.pk: study for study in Study.objects.filter(pk__in=items.values("study_id"))}
    rows = _item_rows_by_study(studies, items)
    return [(studies[pk], row) for pk in sorted(studies, reverse=True) for row in rows[pk]]


@dataclass(frozen=True)
class MeasureAgreement:
    measure: str
    title: str
    agreement: statistics.Agreement[int]  # raters: annotator ids


@dataclass(frozen=True)
class StudyResults:
    rows: list[ItemRow]
    agreement: list[MeasureAgreement]
    prediction: statistics.Prediction
    undecided: int  # items without a Valid_agg yet (too few labels, or a tie)
    labels: int
    needed: int
    median_seconds: float | None
    design: str = ""  # what the agreement figures are computed on, for this study's routing
    adjudicated_prediction: statistics.Prediction | None = None  # majority, replaced by adjudications
    adjudicated: int = 0
    adjudicated_undecided: int = 0

    @property
    def complete_items(self) -> int:
        return sum(1 for row in self.rows if row.complete)

    @property
    def pseudonyms(self) -> dict[int, str]:
        return {label.annotator_id: label.pseudonym for row in self.rows for label in row.labels}


def _measure_agreement(study: Study, rows: list[ItemRow], measure: str) -> statistics.Agreement[int]:
    return agreement_policy.measure_agreement(
        [row.unit(measure) for row in rows if row.labels],
        [{label.annotator_id: label.value(measure) for label in row.first_two} for row in rows if len(row.labels) >= 2],
        two_plus_one=study.routing == Routing.TWO_PLUS_ONE,
        annotators_per_item=study.annotators_per_item,
    )


def study_results(study: Study, rows: list[ItemRow] | None = None) -> StudyResults:
    rows = rows if rows is not None else study_item_rows(study)
    agreement = [
        MeasureAgreement(measure, title, _measure_agreement(study, rows, measure)) for measure, title in MEASURES
    ]
    # Items drawn from a filter or chosen by hand were not predicted valid or invalid by Q.
    grouped = [row for row in rows if row.group != Group.SELECTED]
    decided = [(row.predicted_valid, row.valid_agg) for row in grouped if row.valid_agg is not None]
    final = [(row.predicted_valid, valid) for row in grouped if (valid := row.final("valid")) is not None]
    seconds = [label.seconds_spent for row in rows for label in row.labels]
    return StudyResults(
        design=agreement_policy.design(
            two_plus_one=study.routing == Routing.TWO_PLUS_ONE, annotators_per_item=study.annotators_per_item
        ),
        adjudicated_prediction=statistics.prediction(final),
        adjudicated=sum(1 for row in rows if row.adjudication is not None),
        adjudicated_undecided=sum(1 for row in rows if row.final("valid") is None),
        rows=rows,
        agreement=agreement,
        prediction=statistics.prediction(decided),
        undecided=sum(1 for row in rows if row.valid_agg is None),
        labels=len(seconds),
        needed=len(rows) * study.annotators_per_item,
        median_seconds=pystats.median(seconds) if seconds else None,
    )


def study_judges(rows: list[ItemRow]) -> list[judges.JudgeRater]:
    """Each judge that scored the study's candidates as a rater beside the annotators' majority
    Valid_agg (`annotation.judges`), on the judges' scores as they stand now (a replacing import
    may have changed them since sampling, as `edited_since_sampling` says of the candidate)."""
    scores = candidate_judge_scores([row.candidate_pk for row in rows])
    return judges.judge_raters(
        [
            judges.JudgedItem(
                human_valid=row.valid_agg,
                in_top=None if row.group == Group.SELECTED else row.group == Group.TOP,
                scores=scores[row.candidate_pk],
            )
            for row in rows
        ]
    )


def disagreement_rows(study: Study) -> list[ItemRow]:
    """Items with two or more labels, most disputed first (then those with comments, then by number)."""
    rows = [row for row in study_item_rows(study) if len(row.labels) >= 2]
    return sorted(rows, key=lambda row: (-row.disagreement, -len(row.comments), row.number))


def curator_item_row(study: Study, number: int) -> ItemRow | None:
    rows = _item_rows(study, study.items.filter(number=number))
    return rows[0] if rows else None


@dataclass(frozen=True)
class ItemMaterial:
    """What the annotators judged on an item, for the curator adjudicating it: the two task texts
    and the harm test (as the candidate stands now; `ItemRow.edited_since_sampling` says when an
    edit came after the labels)."""

    source_instruction: str
    instruction: str
    harm_test: str
    harm_summary: str


def item_material(row: ItemRow) -> ItemMaterial:
    candidate = (
        Candidate.objects.select_related("source_task")
        .only("instruction", "harm_test", "harm_summary", "source_task__instruction")
        .get(pk=row.candidate_pk)
    )
    return ItemMaterial(
        source_instruction=candidate.source_task.instruction,
        instruction=candidate.instruction,
        harm_test=candidate.harm_test,
        harm_summary=candidate.harm_summary,
    )


def item_judgements(row: ItemRow) -> list[Judgement]:
    """The judges' scores of the item's candidate, in the imported line's order (curators only:
    the views decide by permission)."""
    return list(Judgement.objects.filter(candidate_id=row.candidate_pk).order_by("position"))


def study_for_curators(pk: int) -> Study:
    return Study.objects.select_related("created_by").get(pk=pk)


@dataclass(frozen=True)
class ItemsBesideTests:
    """A study's item rows for one reader, with each candidate's harm-test verdict beside the human
    one when the reader may see evaluation results (`verdicts` None otherwise)."""

    rows: list[ItemRow]
    verdicts: dict[int, HarmTestVerdict] | None
    disagree_only: bool  # only the rows where humans and harm tests disagree
    total: int


def items_beside_tests(rows: list[ItemRow], user: Any, *, disagree_only: bool = False) -> ItemsBesideTests:
    """The page's and the API's item rows; `disagree_only` keeps the rows whose Valid_agg differs from
    the tests' own verdict (a reader who may not see the tests gets every row)."""
    verdicts = harm_test_verdicts_for(user, [row.candidate_pk for row in rows])
    if verdicts is None:
        return ItemsBesideTests(rows=rows, verdicts=None, disagree_only=False, total=len(rows))
    shown = [row for row in rows if verdicts[row.candidate_pk].disagrees_with(row.valid_agg)] if disagree_only else rows
    return ItemsBesideTests(rows=shown, verdicts=verdicts, disagree_only=disagree_only, total=len(rows))
