"""The blind reads behind an annotator's pages and API: their studies, their progress, the item they
hold (its texts and their own label), their labels, skips and preferences.

Nothing here may read a candidate's group, Q, judge scores, search provenance or any other
annotator's labels: an annotator's page or API response is built from these reads alone, and
`tests/annotation/test_annotator_payloads.py` and `test_blindness.py` pin what reaches them. The
places to claim (`claims`) are the one read that counts others' labels, and it returns only whether
a place is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from django.utils import timezone

from candidates.diffs.diffing import SideBySide, side_by_side
from candidates.models import Candidate

from ..models import Assignment, ItemSkip, LabellingPreferences, Study, StudyMember
from .claims import Place, item_places, places_by_study

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User


@dataclass(frozen=True)
class Progress:
    done: int
    claimed: bool
    open_to_you: int  # items with a free place that you have neither labelled, claimed nor skipped
    skipped: int = 0  # items you set aside (not flagged) that still have a free place
    flagged: int = 0  # items you flagged as unclear: with the curators, out of your queue

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
        skipped=sum(p.free and p.skipped and not p.flagged for p in places),
        flagged=sum(p.flagged for p in places),
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
    places = places_by_study(studies, user.pk, timezone.now())
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
