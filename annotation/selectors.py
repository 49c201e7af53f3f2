"""Reads of annotation studies: what an annotator may see (blind), and results for curators."""

from __future__ import annotations

import statistics as pystats
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Case, Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from candidates.diffing import SideBySide, side_by_side
from candidates.harm_test_verdicts import HarmTestVerdict, harm_test_verdicts_for
from candidates.models import Candidate
from veriharm_site.any_of import AnyOf
from veriharm_site.intervals import Interval, wilson_of_share

from . import statistics
from .guidelines import MEASURES
from .models import (
    QUESTIONS,
    Adjudication,
    Assignment,
    Group,
    ItemSkip,
    LabellingPreferences,
    Routing,
    Study,
    StudyItem,
    StudyMember,
)

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User

# ---------------------------------------------------------------- claiming


@dataclass(frozen=True)
class Place:
    """One item as one annotator's claim sees it."""

    pk: int
    free: bool  # has a place this annotator may take
    mine_open: bool  # the annotator holds an unsubmitted claim on it
    mine_done: bool  # the annotator has labelled it
    skipped: bool = False  # the annotator set it aside and has not come back to it
    gold: bool = False


# Gold items are labelled by every annotator: their point is each annotator's accuracy.
UNLIMITED = 1_000_000


def item_limit(study: Study, *, gold: bool, submitted: int, disagree: bool) -> int:
    """How many labels an item takes: the study's count; under 2+1 routing a third only when the
    first two disagree on a criterion; a gold item one from every annotator."""
    if gold:
        return UNLIMITED
    if study.routing == Routing.TWO_PLUS_ONE:
        return 3 if submitted >= 2 and disagree else 2
    return study.annotators_per_item


def _places_by_study(studies: list[Study], annotator_id: int, now: datetime) -> dict[int, list[Place]]:
    """Every item of these studies, in one grouped query over their assignments."""
    held = Q(assignments__submitted_at__isnull=False) | Q(assignments__expires_at__gt=now)
    mine = Q(assignments__annotator_id=annotator_id)
    submitted = Q(assignments__submitted_at__isnull=False)
    # Two submitted labels differ on a criterion when it has both a yes and a no (counts, not
    # PostgreSQL's bool_and/bool_or, so the embedded SQLite of `make run` reads it too).
    disputed = Q()
    for key in QUESTIONS:
        disputed |= Q(**{f"yes_{key}__gt": 0, f"no_{key}__gt": 0})
    rows = (
        StudyItem.objects.filter(study__in=[s.pk for s in studies])
        .annotate(
            taken=Count("assignments", filter=held),
            n_submitted=Count("assignments", filter=submitted),
            mine_open=Count("assignments", filter=mine & Q(assignments__submitted_at__isnull=True)),
            mine_done=Count("assignments", filter=mine & submitted),
            skipped=Exists(
                ItemSkip.objects.filter(item=OuterRef("pk"), annotator_id=annotator_id, returned_at__isnull=True)
            ),
            **{
                f"yes_{key}": Count("assignments", filter=submitted & Q(**{f"assignments__{key}": True}))
                for key in QUESTIONS
            },
            **{
                f"no_{key}": Count("assignments", filter=submitted & Q(**{f"assignments__{key}": False}))
                for key in QUESTIONS
            },
        )
        .annotate(disagree=Case(When(disputed, then=Value(True)), default=Value(False)))
        .values_list(
            "study_id", "pk", "taken", "mine_open", "mine_done", "skipped", "gold_c1", "n_submitted", "disagree"
        )
        .order_by()
    )
    by_pk = {s.pk: s for s in studies}
    places: dict[int, list[Place]] = {s.pk: [] for s in studies}
    for study_id, pk, taken, is_open, is_done, skipped, gold_c1, n_submitted, disagree in rows:
        gold = gold_c1 is not None
        limit = item_limit(by_pk[study_id], gold=gold, submitted=n_submitted, disagree=bool(disagree))
        places[study_id].append(
            Place(
                pk,
                free=not (is_open or is_done) and taken < limit,
                mine_open=bool(is_open),
                mine_done=bool(is_done),
                skipped=bool(skipped),
                gold=gold,
            )
        )
    return places


def item_places(study: Study, annotator_id: int, now: datetime) -> list[Place]:
    """Every item of the study, in one grouped query over its assignments."""
    return _places_by_study([study], annotator_id, now)[study.pk]


# ---------------------------------------------------------------- annotators (blind)


@dataclass(frozen=True)
class Progress:
    done: int
    claimed: bool
    open_to_you: int  # items with a free place that you have neither labelled, claimed nor skipped
    skipped: int = 0  # items you set aside that still have a free place

    @property
    def assigned(self) -> int:
        return self.done + int(self.claimed) + self.open_to_you + self.skipped

    @property
    def finished(self) -> bool:
        return not self.claimed and self.open_to_you == 0


def progress_of(places: list[Place]) -> Progress:
    return Progress(
        done=sum(p.mine_done for p in places),
        claimed=any(p.mine_open for p in places),
        open_to_you=sum(p.free and not p.skipped for p in places),
        skipped=sum(p.free and p.skipped for p in places),
    )


def annotator_progress(study: Study, user: User, now: datetime | None = None) -> Progress:
    return progress_of(item_places(study, user.pk, now or timezone.now()))


@dataclass(frozen=True)
class StudyProgress:
    study: Study
    progress: Progress


def annotator_studies(user: User) -> list[StudyProgress]:
    """The user's studies, open ones first, with their progress in each."""
    studies = list(Study.objects.filter(memberships__user=user).order_by("status", "-created_at"))
    places = _places_by_study(studies, user.pk, timezone.now())
    return [StudyProgress(study, progress_of(places[study.pk])) for study in studies]


def annotator_study(study_id: int, user: User) -> Study:
    """The study if the user is one of its annotators (Study.DoesNotExist otherwise)."""
    return Study.objects.get(pk=study_id, memberships__user=user)


@dataclass(frozen=True)
class BlindItem:
    """All an annotator sees of an item: the texts and their own label, never the group, Q,
    judges, provenance, the candidate's id or anyone else's labels."""

    study: Study
    token: str
    number: int
    instruction: str
    source_instruction: str
    harm_test: str
    harm_summary: str
    environment: dict[str, Any]
    diff: SideBySide
    own: Assignment

    @property
    def answered(self) -> dict[str, bool | None]:
        return {"c1": self.own.c1, "c2": self.own.c2, "c3": self.own.c3}


def _environment_for_annotators(environment: dict[str, Any]) -> dict[str, Any]:
    return {
        "workdir": environment.get("workdir") or "/app",
        "files": dict(environment.get("files") or {}),
        "setup": environment.get("setup") or "",
    }


def blind_item(study_id: int, token: str, user: User) -> BlindItem:
    """The item behind `token` if the user holds a claim or a label on it (Assignment.DoesNotExist otherwise)."""
    own = Assignment.objects.select_related("study", "item").get(study_id=study_id, item__token=token, annotator=user)
    return blind_item_for(own)


def blind_item_for(own: Assignment) -> BlindItem:
    """The blind view of an assignment whose study and item are loaded (one query for the texts)."""
    candidate = (
        Candidate.objects.select_related("source_task")
        .only(
            "instruction",
            "harm_test",
            "harm_summary",
            "source_task__instruction",
            "source_task__environment",
        )
        .get(pk=own.item.candidate_id)
    )
    return BlindItem(
        study=own.study,
        token=own.item.token,
        number=own.item.number,
        instruction=candidate.instruction,
        source_instruction=candidate.source_task.instruction,
        harm_test=candidate.harm_test,
        harm_summary=candidate.harm_summary,
        environment=_environment_for_annotators(candidate.source_task.environment or {}),
        diff=side_by_side(candidate.source_task.instruction, candidate.instruction),
        own=own,
    )


def single_key_shortcuts_on(user: User) -> bool:
    """Whether the user's single-key shortcuts are on (the default until they turn them off)."""
    return not LabellingPreferences.objects.filter(user=user, single_key_shortcuts=False).exists()


def guidelines_due(study_id: int, user: User) -> bool:
    """Whether the study has guidelines the annotator has not read yet (they come before the first item)."""
    return (
        StudyMember.objects.filter(study_id=study_id, user=user, guidelines_read_at__isnull=True)
        .exclude(study__guidelines="")
        .exists()
    )


@dataclass(frozen=True)
class Neighbours:
    """The annotator's own labelled items just before and after one, by item number (tokens)."""

    previous: str | None
    next: str | None


def own_label_neighbours(study: Study, user: User, number: int) -> Neighbours:
    mine = Assignment.objects.filter(study=study, annotator=user, submitted_at__isnull=False)
    before = (
        mine.filter(item__number__lt=number).order_by("-item__number").values_list("item__token", flat=True).first()
    )
    after = mine.filter(item__number__gt=number).order_by("item__number").values_list("item__token", flat=True).first()
    return Neighbours(before, after)


def annotator_labels(study: Study, user: User) -> QuerySet[Assignment]:
    """The user's own submitted labels in the study, by item number."""
    return (
        Assignment.objects.filter(study=study, annotator=user, submitted_at__isnull=False)
        .select_related("item")
        .only(
            "c1",
            "c2",
            "c3",
            "comment",
            "seconds_spent",
            "submitted_at",
            "updated_at",
            "revisions",
            "item__number",
            "item__token",
            "study_id",
            "annotator_id",
        )
        .order_by("item__number")
    )


@dataclass(frozen=True)
class SkippedItem:
    """An item the annotator set aside and has not come back to, as they may see it."""

    number: int
    token: str
    skipped_at: datetime
    unclear: bool
    reason: str
    open: bool  # a place is still free for them, so they can come back to it


def annotator_skipped(study: Study, user: User, now: datetime | None = None) -> list[SkippedItem]:
    """The user's skipped items in the study, most recently skipped first."""
    free = {p.pk for p in item_places(study, user.pk, now or timezone.now()) if p.free}
    skips = (
        ItemSkip.objects.filter(study=study, annotator=user, returned_at__isnull=True)
        .select_related("item")
        .only("skipped_at", "unclear", "reason", "item__number", "item__token", "item_id")
        .order_by("-skipped_at", "-id")
    )
    return [
        SkippedItem(s.item.number, s.item.token, s.skipped_at, s.unclear, s.reason, s.item_id in free) for s in skips
    ]


# ---------------------------------------------------------------- curators


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


def _measure_agreement(study: Study, rows: list[ItemRow], measure: str) -> statistics.Agreement[int]:
    units = [row.unit(measure) for row in rows if row.labels]
    if study.routing != Routing.TWO_PLUS_ONE:
        return statistics.agreement(units, study.annotators_per_item)
    first_round = [
        {label.annotator_id: label.value(measure) for label in row.first_two} for row in rows if len(row.labels) >= 2
    ]
    return replace(statistics.agreement(units, 2), fleiss=statistics.fleiss_kappa(first_round))


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
        design=TWO_PLUS_ONE_DESIGN
        if study.routing == Routing.TWO_PLUS_ONE
        else FIXED_DESIGN.format(n=study.annotators_per_item),
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


def disagreement_rows(study: Study) -> list[ItemRow]:
    """Items with two or more labels, most disputed first (then those with comments, then by number)."""
    rows = [row for row in study_item_rows(study) if len(row.labels) >= 2]
    return sorted(rows, key=lambda row: (-row.disagreement, -len(row.comments), row.number))


def curator_item_row(study: Study, number: int) -> ItemRow | None:
    rows = _item_rows(study, study.items.filter(number=number))
    return rows[0] if rows else None


def study_for_curators(pk: int) -> Study:
    return Study.objects.select_related("created_by").get(pk=pk)


# ---------------------------------------------------------------- per-annotator quality

FAST_SECONDS = 2.0  # a decision quicker than this cannot have read the task


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
                fast_share=_share(sum(1 for s in seconds if s < FAST_SECONDS), len(seconds)),
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


def _holders(app_label: str, codename: str) -> Q:
    perm = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
    return Q(groups__permissions=perm) | Q(user_permissions=perm) | Q(is_superuser=True)


def annotator_users() -> QuerySet:
    """Active users who may annotate blind: they hold annotation.annotate and cannot see the ranking."""
    User = get_user_model()
    sighted = User.objects.filter(_holders("candidates", "view_ranking")).values("pk")
    return (
        User.objects.filter(is_active=True)
        .filter(_holders("annotation", "annotate"))
        .exclude(pk__in=sighted)
        .distinct()
        .order_by("username")
    )


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
