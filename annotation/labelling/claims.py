"""Where each item of a study has a place to claim, as one annotator's claim sees it.

The count behind a free place reads every label of the item (under 2+1 routing a third place opens
only when the first two disagree), but what leaves this module is only free or not, held by the
annotator or not: no label, group or score of anyone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Case, Count, Exists, OuterRef, Q, Value, When

from ..models import QUESTIONS, ItemSkip, Routing, Study, StudyItem


@dataclass(frozen=True)
class Place:
    """One item as one annotator's claim sees it."""

    pk: int
    free: bool  # has a place this annotator may take
    mine_open: bool  # the annotator holds an unsubmitted claim on it
    mine_done: bool  # the annotator has labelled it
    skipped: bool = False  # the annotator set it aside and has not come back to it
    gold: bool = False
    # Set aside flagged as unclear: handed to the curators, so out of the annotator's queue (their
    # next item and their skipped items alike) unless they choose to label it from their list.
    flagged: bool = False


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


def places_by_study(studies: list[Study], annotator_id: int, now: datetime) -> dict[int, list[Place]]:
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
            flagged=Exists(
                ItemSkip.objects.filter(
                    item=OuterRef("pk"), annotator_id=annotator_id, returned_at__isnull=True, unclear=True
                )
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
            "study_id",
            "pk",
            "taken",
            "mine_open",
            "mine_done",
            "skipped",
            "flagged",
            "gold_c1",
            "n_submitted",
            "disagree",
        )
        .order_by()
    )
    by_pk = {s.pk: s for s in studies}
    places: dict[int, list[Place]] = {s.pk: [] for s in studies}
    for study_id, pk, taken, is_open, is_done, skipped, flagged, gold_c1, n_submitted, disagree in rows:
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
                flagged=bool(flagged),
            )
        )
    return places


def item_places(study: Study, annotator_id: int, now: datetime) -> list[Place]:
    """Every item of the study, in one grouped query over its assignments."""
    return places_by_study([study], annotator_id, now)[study.pk]
