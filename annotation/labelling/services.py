"""Writes of an annotator, blind: claiming the next item, setting one aside and coming back to it,
reading the guidelines, labelling, and their own preferences.

Locks are always taken in one order (study member, then item, then assignment), and a claim that
waits for an item lock takes them in primary-key order, so concurrent annotators cannot deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from ..models import (
    Assignment,
    ItemSkip,
    LabelChange,
    LabellingPreferences,
    Routing,
    Study,
    StudyItem,
    StudyMember,
    StudyStatus,
)
from ..write_rules.locking import rows_locked
from ..write_rules.refusals import MAX_REASON, AnnotationError
from . import order
from .claims import item_limit, item_places

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User

# A label's own time is what the page measured; without it, the time since the claim, capped so
# that a claim left open overnight does not count as work.
MAX_SECONDS_PER_VISIT = 3 * 60 * 60
MAX_COMMENT = settings.VERIHARM_MAX_COMMENT_CHARS
MAX_SECONDS_SPENT = 7 * 24 * 3600.0  # a label's time on task; more is a broken client, not work


class NotAMember(AnnotationError):
    status_code = 404  # a study you are not in is one you cannot see


class StudyClosed(AnnotationError):
    status_code = 409


class ClaimLost(AnnotationError):
    status_code = 409


class NotYourItem(AnnotationError):
    status_code = 404


def _taken(item_id: int, now: datetime, *, excluding: int | None = None) -> int:
    """Places held on an item: submitted labels and unexpired claims. Call with the item row locked."""
    rows = Assignment.objects.filter(item_id=item_id).filter(Q(submitted_at__isnull=False) | Q(expires_at__gt=now))
    if excluding is not None:
        rows = rows.exclude(annotator_id=excluding)
    return rows.count()


def _member_lock(study_id: int, annotator: User) -> StudyMember:
    """Serialises one annotator's requests in one study (a double click must not claim twice)."""
    try:
        member = rows_locked(StudyMember.objects.select_related("study")).get(study_id=study_id, user=annotator)
    except StudyMember.DoesNotExist:
        raise NotAMember("You are not an annotator of this study.") from None
    if not member.study.is_open:
        raise StudyClosed("This study is closed: labels can no longer be added or changed.")
    return member


def _claim_renew(own: Assignment, study: Study, now: datetime) -> bool:
    """Renew the annotator's expired claim if its place is still free; give it up otherwise."""
    item = rows_locked(StudyItem.objects).only("pk", "gold_c1").get(pk=own.item_id)
    if _taken(own.item_id, now, excluding=own.annotator_id) < _item_limit(study, item.pk, item.is_gold):
        own.expires_at = now + timedelta(minutes=study.claim_timeout_minutes)
        return Assignment.objects.filter(pk=own.pk, submitted_at__isnull=True).update(expires_at=own.expires_at) == 1
    own.delete()
    return False


_INSERT_IF_ROOM = """
    INSERT INTO {assignment} (study_id, item_id, annotator_id, claimed_at, expires_at, comment, seconds_spent, revisions)
    SELECT %s, %s, %s, %s, %s, '', 0, 0
    WHERE (SELECT COUNT(*) FROM {assignment}
           WHERE item_id = %s AND (submitted_at IS NOT NULL OR expires_at > %s)) < %s
    RETURNING id
"""


def _item_limit(study: Study, item_id: int, gold: bool) -> int:
    """The item's label count under the study's routing; call with the item row locked."""
    if not gold and study.routing != Routing.TWO_PLUS_ONE:
        return study.annotators_per_item
    answers = list(Assignment.objects.filter(item_id=item_id, submitted_at__isnull=False).values_list("c1", "c2", "c3"))
    return item_limit(study, gold=gold, submitted=len(answers), disagree=len(set(answers)) > 1)


def _insert_if_room(study: Study, item: StudyItem, annotator_id: int, now: datetime) -> Assignment | None:
    """Claim a place on a locked item if one is free. Counting and inserting in one statement keeps
    the claim to one round trip; the statement's snapshot is taken after the lock, so it sees every
    claim committed before (under READ COMMITTED each statement gets a fresh snapshot)."""
    expires = now + timedelta(minutes=study.claim_timeout_minutes)
    at, until = (connection.ops.adapt_datetimefield_value(moment) for moment in (now, expires))
    with connection.cursor() as cursor:
        cursor.execute(
            _INSERT_IF_ROOM.format(assignment=connection.ops.quote_name(Assignment._meta.db_table)),
            [study.pk, item.pk, annotator_id, at, until, item.pk, at, _item_limit(study, item.pk, item.is_gold)],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    assignment = Assignment(
        pk=row[0], study=study, item=item, annotator_id=annotator_id, claimed_at=now, expires_at=expires
    )
    assignment._state.adding = False
    return assignment


def _claim_first_free(
    study: Study, annotator_id: int, item_ids: list[int], now: datetime, *, wait: bool
) -> tuple[Assignment | None, list[int]]:
    """Lock and claim the first item of `item_ids` with a free place; returns it and the items skipped
    because another transaction held them. With `wait`, waits for each lock instead of skipping."""
    skipped = []
    for item_id in item_ids:
        item = (
            rows_locked(StudyItem.objects.filter(pk=item_id), skip_locked=not wait)
            .only("pk", "study_id", "candidate_id", "token", "number", "gold_c1")
            .first()
        )
        if item is None:
            skipped.append(item_id)
            continue
        assignment = _insert_if_room(study, item, annotator_id, now)
        if assignment is not None:
            return assignment, skipped
    return None, skipped


def _claim_attempt(
    study_id: int, annotator: User, *, wait: bool, skipped: bool = False
) -> tuple[Assignment | None, list[int]]:
    with transaction.atomic():
        study = _member_lock(study_id, annotator).study
        now = timezone.now()
        places = item_places(study, annotator.pk, now)
        if any(p.mine_open for p in places):
            own = Assignment.objects.select_related("study", "item").get(
                study=study, annotator=annotator, submitted_at__isnull=True
            )
            if own.expires_at > now:
                return own, []
            if not wait and _claim_renew(own, study, now):
                return own, []
            if wait:
                # A waiting claim may hold only locks taken in primary-key order, so it does not
                # lock this item to weigh a renewal: the expired claim is simply given up.
                own.delete()
            places = item_places(study, annotator.pk, now)
        # Items the annotator set aside are offered only when they ask to come back to them, and
        # items they flagged as unclear not even then: those went to the curators.
        free = {p.pk for p in places if p.free and p.skipped == skipped and not p.flagged}
        ordered = order.mix_gold(
            order.annotator_order([p.pk for p in places], study.seed, annotator.pk),
            {p.pk for p in places if p.gold},
            study.gold_rate,
        )
        candidates = [pk for pk in ordered if pk in free]
        if wait:
            candidates.sort()  # waiting claims lock in one global order: no deadlock between them
        claimed, passed = _claim_first_free(study, annotator.pk, candidates, now, wait=wait)
        if claimed is not None and skipped:
            ItemSkip.objects.filter(item_id=claimed.item_id, annotator=annotator).update(returned_at=now)
        return claimed, passed


def item_claim_next(study_id: int, annotator: User, *, skipped: bool = False) -> Assignment | None:
    """The annotator's open claim or a new one on the next free item in their own order; None when
    nothing is left for them. Never gives an item more places than its annotator count. With
    `skipped`, the next of the items they set aside instead."""
    assignment, passed = _claim_attempt(study_id, annotator, wait=False, skipped=skipped)
    if assignment is None and passed:
        # Every free item was being claimed by someone else at that instant; their locks last a
        # few milliseconds, so wait for them in a fresh transaction rather than report "done".
        assignment, _ = _claim_attempt(study_id, annotator, wait=True, skipped=skipped)
    return assignment


def item_skip(study_id: int, token: str, annotator: User, *, unclear: bool = False, reason: str = "") -> ItemSkip:
    """Set the annotator's claimed item aside: the place goes back to the pool for others, and the
    item waits among the annotator's skipped items. `unclear` flags it for curators, with a reason:
    a flagged item leaves the annotator's queue (neither their next item nor their skipped items
    bring it back; only their own choice from the list of items they set aside does)."""
    reason = reason.strip()
    if unclear and not reason:
        raise AnnotationError("Say what is unclear about this item: the reason is required to flag it.")
    if len(reason) > MAX_REASON:
        raise AnnotationError(f"The reason is {len(reason)} characters long; at most {MAX_REASON} are kept.")
    with transaction.atomic():
        member = _member_lock(study_id, annotator)
        own = Assignment.objects.filter(study_id=study_id, item__token=token, annotator=annotator).first()
        if own is None:
            raise NotYourItem("This item is not assigned to you.")
        if own.submitted:
            raise AnnotationError("You labelled this item already: change your answers instead of skipping it.")
        own.delete()
        now = timezone.now()
        skip, _ = ItemSkip.objects.update_or_create(
            item_id=own.item_id,
            annotator=annotator,
            defaults={
                "study_id": member.study_id,
                "skipped_at": now,
                "returned_at": None,
                "unclear": unclear,
                "reason": reason,
            },
        )
    return skip


class NoPlaceLeft(AnnotationError):
    status_code = 409


def item_return(study_id: int, token: str, annotator: User) -> Assignment:
    """Claim one of the annotator's skipped items again, to label it: it leaves their skipped items
    (asked again, the claim it made). An unlabelled item they hold is given up for it. Refused when
    other annotators have taken every place on it meanwhile (it then needs no label from them)."""
    with transaction.atomic():
        study = _member_lock(study_id, annotator).study
        now = timezone.now()
        own = (
            Assignment.objects.filter(study=study, annotator=annotator, submitted_at__isnull=True)
            .select_related("item")
            .first()
        )
        if own is not None and own.expires_at > now and own.item.token == token:
            return own  # already back (a second click): the claim it made
        skip = (
            ItemSkip.objects.filter(study_id=study_id, item__token=token, annotator=annotator, returned_at__isnull=True)
            .only("pk", "item_id")
            .first()
        )
        if skip is None:
            raise NotYourItem("This item is not among the items you set aside.")
        item = (
            rows_locked(StudyItem.objects.filter(pk=skip.item_id))
            .only("pk", "study_id", "candidate_id", "token", "number", "gold_c1")
            .get()
        )
        if own is not None:
            # One open claim per study: the item held now (unlabelled) goes back to the pool and
            # comes again in the annotator's order, as an expired claim would.
            own.delete()
        claimed = _insert_if_room(study, item, annotator.pk, now)
        if claimed is None:
            raise NoPlaceLeft("Other annotators have taken every place on this item since you set it aside.")
        ItemSkip.objects.filter(pk=skip.pk).update(returned_at=now)
    return claimed


def guidelines_read(study_id: int, annotator: User) -> StudyMember:
    """Record that the annotator has read the study's guidelines (the first item follows them)."""
    with transaction.atomic():
        member = _member_lock(study_id, annotator)
        if member.guidelines_read_at is None:
            member.guidelines_read_at = timezone.now()
            member.save(update_fields=["guidelines_read_at"])
    return member


@dataclass(frozen=True)
class LabelInput:
    c1: bool
    c2: bool
    c3: bool
    comment: str = ""
    seconds_spent: float | None = None


def _seconds(given: float | None, assignment: Assignment, now: datetime) -> float:
    if given is None:
        # Without the page's measurement, a first label counts the time since its claim; a revision nothing.
        given = (now - assignment.claimed_at).total_seconds() if assignment.submitted_at is None else 0.0
    return float(min(max(given, 0.0), MAX_SECONDS_PER_VISIT))


def label_submit(study_id: int, token: str, annotator: User, label: LabelInput) -> Assignment:
    """Submit or revise the annotator's label of one item (while the study is open)."""
    if len(label.comment) > MAX_COMMENT:
        raise AnnotationError(f"The comment is {len(label.comment)} characters long; at most {MAX_COMMENT} are kept.")
    with transaction.atomic():
        saved = _label_save(study_id, token, annotator, label)
    # Raised after the commit, so that giving up the lost claim is kept.
    if saved is None:
        raise ClaimLost(
            "Your claim on this item expired and the item went to another annotator; your answers were not saved."
        )
    return saved


def _study_open_until_commit(study_id: int) -> bool:
    """Whether the study is open, holding a share lock on its row until this transaction ends:
    closing takes a stronger lock, so it waits for labels in flight, and labels after it see it closed.
    Share locks do not block each other, so annotators still submit in parallel. (SQLite has no row
    locks; it runs one writing transaction at a time anyway.)"""
    table = connection.ops.quote_name(Study._meta.db_table)
    lock = " FOR SHARE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status FROM {table} WHERE id = %s{lock}", [study_id])
        row = cursor.fetchone()
    return row is not None and row[0] == StudyStatus.OPEN


def _label_save(study_id: int, token: str, annotator: User, label: LabelInput) -> Assignment | None:
    try:
        current = Assignment.objects.select_related("study").get(
            item__token=token, study_id=study_id, annotator=annotator
        )
    except Assignment.DoesNotExist:
        raise NotYourItem("This item is not assigned to you.") from None
    if not _study_open_until_commit(study_id):
        raise StudyClosed("This study is closed: labels can no longer be added or changed.")
    if current.submitted_at is None:
        # A first submission takes a place for good: decide it under the item lock, against
        # claimers who may have taken the place if this claim expired.
        rows_locked(StudyItem.objects).get(pk=current.item_id)
    assignment = rows_locked(Assignment.objects.select_related("study")).filter(pk=current.pk).first()
    if assignment is None:  # the claim was given up in the meantime
        return None
    now = timezone.now()
    if assignment.submitted_at is None and assignment.expires_at <= now:
        item = StudyItem.objects.only("pk", "gold_c1").get(pk=assignment.item_id)
        if _taken(assignment.item_id, now, excluding=annotator.pk) >= _item_limit(
            assignment.study, item.pk, item.is_gold
        ):
            assignment.delete()
            return None
    assignment.seconds_spent += _seconds(label.seconds_spent, assignment, now)
    if assignment.submitted_at is not None:
        LabelChange.objects.create(
            assignment=assignment,
            c1=assignment.c1,
            c2=assignment.c2,
            c3=assignment.c3,
            comment=assignment.comment,
            answered_at=assignment.updated_at or assignment.submitted_at,
            replaced_at=now,
        )
    assignment.c1, assignment.c2, assignment.c3 = label.c1, label.c2, label.c3
    assignment.comment = label.comment.strip()
    if assignment.submitted_at is None:
        assignment.submitted_at = now
    else:
        assignment.revisions += 1
    assignment.updated_at = now
    assignment.save()
    return assignment


def preferences_set(user: User, *, single_key_shortcuts: bool) -> LabellingPreferences:
    preferences, _ = LabellingPreferences.objects.update_or_create(
        user=user, defaults={"single_key_shortcuts": single_key_shortcuts}
    )
    return preferences
