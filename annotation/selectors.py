"""Reads of annotation studies: what an annotator may see (blind), and results for curators."""
from __future__ import annotations

import statistics as pystats
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from candidates.diffing import SideBySide, side_by_side
from candidates.models import Candidate

from . import statistics
from .guidelines import MEASURES
from .models import Assignment, Group, Study, StudyItem, StudyMember


# ---------------------------------------------------------------- claiming


@dataclass(frozen=True)
class Place:
    """One item as one annotator's claim sees it."""

    pk: int
    free: bool  # has a place this annotator may take
    mine_open: bool  # the annotator holds an unsubmitted claim on it
    mine_done: bool  # the annotator has labelled it


def _places_by_study(studies: list[Study], annotator_id: int, now: datetime) -> dict[int, list[Place]]:
    """Every item of these studies, in one grouped query over their assignments."""
    held = Q(assignments__submitted_at__isnull=False) | Q(assignments__expires_at__gt=now)
    mine = Q(assignments__annotator_id=annotator_id)
    rows = (
        StudyItem.objects.filter(study__in=[s.pk for s in studies])
        .annotate(
            taken=Count("assignments", filter=held),
            mine_open=Count("assignments", filter=mine & Q(assignments__submitted_at__isnull=True)),
            mine_done=Count("assignments", filter=mine & Q(assignments__submitted_at__isnull=False)),
        )
        .values_list("study_id", "pk", "taken", "mine_open", "mine_done")
        .order_by()
    )
    per_item = {s.pk: s.annotators_per_item for s in studies}
    places: dict[int, list[Place]] = {s.pk: [] for s in studies}
    for study_id, pk, taken, is_open, is_done in rows:
        places[study_id].append(Place(pk, free=not (is_open or is_done) and taken < per_item[study_id],
                                      mine_open=bool(is_open), mine_done=bool(is_done)))
    return places


def item_places(study: Study, annotator_id: int, now: datetime) -> list[Place]:
    """Every item of the study, in one grouped query over its assignments."""
    return _places_by_study([study], annotator_id, now)[study.pk]


# ---------------------------------------------------------------- annotators (blind)


@dataclass(frozen=True)
class Progress:
    done: int
    claimed: bool
    open_to_you: int  # items with a free place that you have neither labelled nor claimed

    @property
    def assigned(self) -> int:
        return self.done + int(self.claimed) + self.open_to_you

    @property
    def finished(self) -> bool:
        return not self.claimed and self.open_to_you == 0


def progress_of(places: list[Place]) -> Progress:
    return Progress(
        done=sum(p.mine_done for p in places),
        claimed=any(p.mine_open for p in places),
        open_to_you=sum(p.free for p in places),
    )


def annotator_progress(study: Study, user: AbstractBaseUser, now: datetime | None = None) -> Progress:
    return progress_of(item_places(study, user.pk, now or timezone.now()))


@dataclass(frozen=True)
class StudyProgress:
    study: Study
    progress: Progress


def annotator_studies(user: AbstractBaseUser) -> list[StudyProgress]:
    """The user's studies, open ones first, with their progress in each."""
    studies = list(Study.objects.filter(memberships__user=user).order_by("status", "-created_at"))
    places = _places_by_study(studies, user.pk, timezone.now())
    return [StudyProgress(study, progress_of(places[study.pk])) for study in studies]


def annotator_study(study_id: int, user: AbstractBaseUser) -> Study:
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


def blind_item(study_id: int, token: str, user: AbstractBaseUser) -> BlindItem:
    """The item behind `token` if the user holds a claim or a label on it (Assignment.DoesNotExist otherwise)."""
    own = Assignment.objects.select_related("study", "item").get(study_id=study_id, item__token=token, annotator=user)
    return blind_item_for(own)


def blind_item_for(own: Assignment) -> BlindItem:
    """The blind view of an assignment whose study and item are loaded (one query for the texts)."""
    candidate = (
        Candidate.objects.select_related("source_task")
        .only(
            "instruction", "harm_test", "harm_summary",
            "source_task__instruction", "source_task__environment",
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


def annotator_labels(study: Study, user: AbstractBaseUser) -> QuerySet[Assignment]:
    """The user's own submitted labels in the study, by item number."""
    return (
        Assignment.objects.filter(study=study, annotator=user, submitted_at__isnull=False)
        .select_related("item")
        .only("c1", "c2", "c3", "comment", "seconds_spent", "submitted_at", "updated_at", "revisions",
              "item__number", "item__token", "study_id", "annotator_id")
        .order_by("item__number")
    )


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
                StratumRow(group, stratum["name"], stratum["pool"], stratum["quota"], stratum["allocated"],
                           realised.get((group, stratum["name"]), 0))
            )
    return rows


@dataclass(frozen=True)
class MemberRow:
    username: str
    pseudonym: str
    done: int
    claimed: bool


def member_rows(study: Study) -> list[MemberRow]:
    counts = {
        row["annotator_id"]: row
        for row in study.assignments.values("annotator_id").annotate(
            done=Count("pk", filter=Q(submitted_at__isnull=False)),
            claimed=Count("pk", filter=Q(submitted_at__isnull=True, expires_at__gt=timezone.now())),
        )
    }
    return [
        MemberRow(m.user.get_username(), m.pseudonym, counts.get(m.user_id, {}).get("done", 0),
                  bool(counts.get(m.user_id, {}).get("claimed", 0)))
        for m in study.memberships.select_related("user").order_by("pseudonym")
    ]


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
    labels: list[LabelRow] = field(default_factory=list)

    @property
    def predicted_valid(self) -> bool:
        return self.group == Group.TOP

    def yes(self, measure: str) -> int:
        return sum(1 for label in self.labels if label.value(measure))

    def majority(self, measure: str) -> bool | None:
        return statistics.majority([label.value(measure) for label in self.labels], self.required)

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
        shares = [
            statistics.percent_agreement([{i: label.value(measure) for i, label in enumerate(self.labels)}]).value
            for measure, _ in MEASURES
        ]
        return 1.0 - sum(shares) / len(shares)

    @property
    def comments(self) -> list[LabelRow]:
        return [label for label in self.labels if label.comment]

    def unit(self, measure: str) -> dict[int, bool]:
        return {label.annotator_id: label.value(measure) for label in self.labels}


def study_item_rows(study: Study) -> list[ItemRow]:
    """Every item of the study with its submitted labels, by item number (three queries)."""
    return _item_rows(study, study.items.all())


def _item_rows(study: Study, items: QuerySet[StudyItem]) -> list[ItemRow]:
    members = {m.user_id: (m.pseudonym, m.user.get_username()) for m in study.memberships.select_related("user")}
    rows = {
        item.pk: ItemRow(
            item_pk=item.pk,
            number=item.number,
            candidate_pk=item.candidate_id,
            candidate_external_id=item.candidate.external_id,
            group=item.group,
            rank=item.rank_at_sampling,
            quality=item.quality_at_sampling,
            stratum=item.stratum,
            edited_since_sampling=item.candidate.revision != item.revision_at_sampling,
            required=study.annotators_per_item,
        )
        for item in items.select_related("candidate").only(
            "number", "group", "stratum", "rank_at_sampling", "quality_at_sampling", "revision_at_sampling",
            "candidate_id", "candidate__external_id", "candidate__revision", "study_id",
        ).order_by("number")
    }
    labels = study.assignments.filter(submitted_at__isnull=False, item_id__in=list(rows)).order_by("submitted_at", "pk")
    for a in labels:
        pseudonym, username = members.get(a.annotator_id, (f"A?{a.annotator_id}", ""))
        rows[a.item_id].labels.append(
            LabelRow(a.annotator_id, pseudonym, username, a.c1, a.c2, a.c3, a.comment, a.seconds_spent,
                     a.submitted_at, a.updated_at, a.revisions)
        )
    for row in rows.values():
        row.labels.sort(key=lambda label: label.pseudonym)
    return list(rows.values())


def candidate_item_rows(candidate_id: int) -> list[tuple[Study, ItemRow]]:
    """The human verdicts on one candidate: its item row in every study that sampled it."""
    studies = Study.objects.filter(items__candidate_id=candidate_id).distinct().order_by("-pk")
    return [
        (study, row)
        for study in studies
        for row in _item_rows(study, study.items.filter(candidate_id=candidate_id))
    ]


@dataclass(frozen=True)
class MeasureAgreement:
    measure: str
    title: str
    agreement: statistics.Agreement


@dataclass(frozen=True)
class StudyResults:
    rows: list[ItemRow]
    agreement: list[MeasureAgreement]
    prediction: statistics.Prediction
    undecided: int  # items without a Valid_agg yet (too few labels, or a tie)
    labels: int
    needed: int
    median_seconds: float | None

    @property
    def complete_items(self) -> int:
        return sum(1 for row in self.rows if row.complete)

    @property
    def pseudonyms(self) -> dict[int, str]:
        return {label.annotator_id: label.pseudonym for row in self.rows for label in row.labels}


def study_results(study: Study, rows: list[ItemRow] | None = None) -> StudyResults:
    rows = rows if rows is not None else study_item_rows(study)
    agreement = [
        MeasureAgreement(measure, title, statistics.agreement([row.unit(measure) for row in rows if row.labels],
                                                              study.annotators_per_item))
        for measure, title in MEASURES
    ]
    decided = [(row.predicted_valid, row.valid_agg) for row in rows if row.valid_agg is not None]
    seconds = [label.seconds_spent for row in rows for label in row.labels]
    return StudyResults(
        rows=rows,
        agreement=agreement,
        prediction=statistics.prediction(decided),
        undecided=len(rows) - len(decided),
        labels=len(seconds),
        needed=len(rows) * study.annotators_per_item,
        median_seconds=pystats.median(seconds) if seconds else None,
    )


def disagreement_rows(study: Study) -> list[ItemRow]:
    """Items with two or more labels, most disputed first (then those with comments, then by number)."""
    rows = [row for row in study_item_rows(study) if len(row.labels) >= 2]
    return sorted(rows, key=lambda row: (-row.disagreement, -len(row.comments), row.number))


def study_for_curators(pk: int) -> Study:
    return Study.objects.select_related("created_by").get(pk=pk)

