"""Writes of annotation studies: creating a study from the ranked pool, claiming, labelling, closing.

Locks are always taken in one order (study member, then item, then assignment), and a claim that
waits for an item lock takes them in primary-key order, so concurrent annotators cannot deadlock.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Manager, Q, QuerySet
from django.utils import timezone

from candidates.models import Candidate
from candidates.selectors import candidate_group_ids, ranking_bounds
from veriharm_site.refusals import Refused

from . import sampling
from .drawing import Pool, drawn_pool
from .models import (
    Adjudication,
    Assignment,
    DemoStudy,
    DrawnFrom,
    Group,
    ItemSkip,
    LabelChange,
    LabellingPreferences,
    Routing,
    StratifyBy,
    Study,
    StudyItem,
    StudyMember,
    StudyStatus,
)
from .selectors.claims import item_limit, item_places
from .selectors.results import Answers

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User

# A label's own time is what the page measured; without it, the time since the claim, capped so
# that a claim left open overnight does not count as work.
MAX_SECONDS_PER_VISIT = 3 * 60 * 60
MAX_COMMENT = settings.VERIHARM_MAX_COMMENT_CHARS
# Upper bounds of a study's numbers: beyond them a value means nothing (a claim held for a month, a
# group larger than any pool) and would overflow the database's integer columns.
MAX_CLAIM_TIMEOUT_MINUTES = 30 * 24 * 60
MAX_GROUP_SIZE = 1_000_000
MAX_ANNOTATORS_PER_ITEM = 50
MAX_NAME = 200
MAX_SECONDS_SPENT = 7 * 24 * 3600.0  # a label's time on task; more is a broken client, not work


def _locked(rows: Manager | QuerySet, *, skip_locked: bool = False) -> QuerySet:
    """SELECT ... FOR NO KEY UPDATE of these rows only: joined rows (the study) stay unlocked, and
    inserts that reference a locked row (their foreign-key check takes KEY SHARE) are not blocked."""
    return rows.select_for_update(no_key=True, of=("self",), skip_locked=skip_locked)


class AnnotationError(Refused):
    """A refused request; the message says what is wrong and nothing was changed."""

    def __init__(self, message: str = "", *, problems: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__("", message, problems=problems)


class NotAMember(AnnotationError):
    status_code = 404  # a study you are not in is one you cannot see


class StudyClosed(AnnotationError):
    status_code = 409


class ClaimLost(AnnotationError):
    status_code = 409


class NotYourItem(AnnotationError):
    status_code = 404


class StudyRefused(AnnotationError):
    """A study's settings refused, each problem under the name of its field."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__(
            "; ".join(f"{name}: {message}" for name, message in self.errors.items()),
            problems=self.errors.items(),
        )


@dataclass(frozen=True)
class StudySpec:
    name: str
    seed: int
    top_k: int = 150
    per_group: int = 25
    stratify_by: str = StratifyBy.PERTURBATION
    annotators_per_item: int = 3
    claim_timeout_minutes: int = 30
    description: str = ""
    routing: str = Routing.FIXED
    guidelines: str = ""
    gold_rate: float = 0.0
    # How the items are drawn: n of the top-K and n of the bottom-K (groups), n of the candidates
    # the ranking's filter matches (filter: its query parameters), or the chosen candidates' ids.
    drawn_from: str = DrawnFrom.GROUPS
    ranking_filter: Mapping[str, Any] = field(default_factory=dict)
    candidate_ids: Sequence[str] = ()


def _members_refusal(users: Sequence[User]) -> str:
    """Why some of `users` cannot be annotators: they lack the role, or they can see the ranking
    (group, Q and judges) and so would not label blind."""
    without_role = [u.get_username() for u in users if not u.has_perm("annotation.annotate")]
    if without_role:
        return f"{', '.join(without_role)} cannot annotate (they lack annotation.annotate)"
    sighted = [u.get_username() for u in users if u.has_perm("candidates.view_ranking")]
    if sighted:
        return f"{', '.join(sighted)} can see the ranking, so they would not label blind"
    return ""


def _spec_errors(spec: StudySpec, annotators: Sequence[User]) -> dict[str, str]:
    errors: dict[str, str] = {}
    if not spec.name.strip():
        errors["name"] = "is required"
    elif Study.objects.filter(name=spec.name.strip()).exists():
        errors["name"] = f"a study named {spec.name.strip()!r} exists already"
    if len(spec.name) > MAX_NAME:
        errors["name"] = f"is {len(spec.name)} characters long; at most {MAX_NAME} are allowed"
    if len(spec.description) > settings.VERIHARM_MAX_DESCRIPTION_CHARS:
        errors["description"] = (
            f"is {len(spec.description)} characters long; at most "
            f"{settings.VERIHARM_MAX_DESCRIPTION_CHARS} are allowed (VERIHARM_MAX_DESCRIPTION_CHARS)"
        )
    for name, high in (
        ("top_k", MAX_GROUP_SIZE),
        ("per_group", MAX_GROUP_SIZE),
        ("annotators_per_item", MAX_ANNOTATORS_PER_ITEM),
        ("claim_timeout_minutes", MAX_CLAIM_TIMEOUT_MINUTES),
    ):
        if not 1 <= getattr(spec, name) <= high:
            errors[name] = f"must be from 1 to {high}, got {getattr(spec, name)}"
    if not 0 <= spec.seed < 2**31:
        errors["seed"] = "must be between 0 and 2147483647"
    if spec.routing not in Routing.values:
        errors["routing"] = f"must be one of {', '.join(repr(v) for v in Routing.values)}"
    elif spec.routing == Routing.TWO_PLUS_ONE and spec.annotators_per_item != 2:
        errors["annotators_per_item"] = "2+1 routing gives each item two annotators (a third on disagreement): set 2"
    if not 0 <= spec.gold_rate <= 1:
        errors["gold_rate"] = f"must be a share from 0 to 1, got {spec.gold_rate}"
    if spec.stratify_by not in StratifyBy.values:
        errors["stratify_by"] = f"must be one of {', '.join(repr(v) for v in StratifyBy.values)}"
    groups = spec.drawn_from == DrawnFrom.GROUPS
    if spec.drawn_from not in DrawnFrom.values:
        errors["drawn_from"] = f"must be one of {', '.join(repr(v) for v in DrawnFrom.values)}"
    if groups and spec.per_group > spec.top_k >= 1:
        errors["per_group"] = f"cannot draw {spec.per_group} items from a group of K={spec.top_k}"
    refused = _members_refusal(annotators)
    if refused:
        errors["annotators"] = refused
    elif spec.routing == Routing.TWO_PLUS_ONE and len(annotators) < 3:
        errors["annotators"] = f"2+1 routing needs three annotators for the disagreements, got {len(annotators)}"
    elif len(annotators) < spec.annotators_per_item:
        errors["annotators"] = (
            f"{spec.annotators_per_item} annotators per item need at least {spec.annotators_per_item} "
            f"annotators in the study, got {len(annotators)}"
        )
    if groups and "top_k" not in errors:
        ranked = ranking_bounds(spec.top_k).ranked
        if ranked == 0:
            errors["top_k"] = "no candidate is ranked yet: import judged candidates first"
        elif ranked < 2 * spec.top_k:
            errors["top_k"] = (
                f"only {ranked} candidates are ranked, so the top {spec.top_k} and the bottom {spec.top_k} "
                f"would overlap; choose K of at most {ranked // 2}"
            )
    return errors


def _pseudonyms_assign(study: Study, users: Sequence[User], start: int) -> list[StudyMember]:
    # A random order, so that pseudonyms say nothing about user names or join order.
    shuffled = list(users)
    secrets.SystemRandom().shuffle(shuffled)
    return [StudyMember(study=study, user=u, pseudonym=f"A{start + i}") for i, u in enumerate(shuffled)]


def _group_pools(spec: StudySpec) -> list[Pool]:
    """The top-K and the bottom-K, each stratified by the study's field."""
    pools = []
    for group in (Group.TOP, Group.BOTTOM):
        ids = candidate_group_ids(group, spec.top_k)
        strata = dict(
            Candidate.objects.filter(pk__in=ids).values_list("pk", spec.stratify_by)
            if spec.stratify_by
            else ((pk, "") for pk in ids)
        )
        pools.append(Pool(group=group, members=[(pk, strata[pk]) for pk in ids], size=spec.per_group))
    return pools


@transaction.atomic
def study_create(spec: StudySpec, *, annotators: Sequence[User], created_by: User | None = None) -> Study:
    """Open a study on n of the top-K and n of the bottom-K, or on a sample of a filter of the
    ranking, or on chosen candidates; StudyRefused changes nothing. A filtered or chosen study is
    one stratum (its items' group is "selected"): whatever `stratify_by` says, it is not stratified."""
    errors = _spec_errors(spec, annotators)
    selection = None
    if spec.drawn_from in (DrawnFrom.FILTER, DrawnFrom.CHOSEN) and "drawn_from" not in errors:
        selection = drawn_pool(spec.drawn_from, spec.ranking_filter, spec.candidate_ids, spec.per_group)
        errors |= selection.errors
    if errors:
        raise StudyRefused(errors)
    pools = [selection.pool] if selection is not None and selection.pool is not None else _group_pools(spec)
    stratify_by = "" if selection is not None else spec.stratify_by
    samples = {pool.group: sampling.stratified_sample(pool.members, pool.size, spec.seed, pool.group) for pool in pools}
    stratum_of = {pk: stratum for pool in pools for pk, stratum in pool.members}
    group_of = {pk: group for group, sample in samples.items() for pk in sample.chosen}
    # Every pool holds ranked candidates only (a group by its rank, a selection refuses the rest).
    rows: dict[int, Mapping[str, Any]] = {
        row["pk"]: row
        for row in Candidate.objects.filter(pk__in=list(group_of), rank__isnull=False).values(
            "pk", "rank", "quality", "revision"
        )
    }
    study = Study.objects.create(
        name=spec.name.strip(),
        description=spec.description,
        created_by=created_by,
        seed=spec.seed,
        top_k=selection.top_k if selection is not None and selection.top_k else spec.top_k,
        per_group=pools[0].size,
        stratify_by=stratify_by,
        annotators_per_item=spec.annotators_per_item,
        claim_timeout_minutes=spec.claim_timeout_minutes,
        routing=spec.routing,
        guidelines=spec.guidelines.strip(),
        gold_rate=spec.gold_rate,
        ranked_at_sampling=ranking_bounds(spec.top_k).ranked,
        drawn_from=spec.drawn_from,
        drawn_filter=selection.recorded_filter if selection is not None else {},
        strata_report={
            "rule": sampling.ROUNDING_RULE if selection is None else selection.rule,
            "groups": {
                group: {
                    "pool": sample.pool,
                    "strata": [
                        {"name": s.name, "pool": s.pool, "quota": round(s.quota, 4), "allocated": s.allocated}
                        for s in sample.strata
                    ],
                }
                for group, sample in samples.items()
            },
        },
    )
    numbers = sampling.item_numbers(list(group_of), spec.seed)
    StudyItem.objects.bulk_create(
        [
            StudyItem(
                study=study,
                candidate_id=pk,
                number=numbers[pk],
                token=secrets.token_urlsafe(12),
                group=group,
                stratum=stratum_of[pk],
                rank_at_sampling=rows[pk]["rank"],
                quality_at_sampling=rows[pk]["quality"],
                revision_at_sampling=rows[pk]["revision"],
            )
            for pk, group in sorted(group_of.items(), key=lambda pair: numbers[pair[0]])
        ]
    )
    StudyMember.objects.bulk_create(_pseudonyms_assign(study, annotators, start=1))
    return study


@transaction.atomic
def study_members_add(study: Study, users: Sequence[User]) -> list[StudyMember]:
    _locked(Study.objects).get(pk=study.pk)
    present = set(study.memberships.values_list("user_id", flat=True))
    new = [u for u in users if u.pk not in present]
    refused = _members_refusal(new)
    if refused:
        raise StudyRefused({"annotators": refused})
    return StudyMember.objects.bulk_create(_pseudonyms_assign(study, new, start=study.memberships.count() + 1))


def _study_status_set(study: Study, status: str) -> Study:
    with transaction.atomic():
        locked = _locked(Study.objects).get(pk=study.pk)
        locked.status = status
        locked.closed_at = timezone.now() if status == StudyStatus.CLOSED else None
        locked.save(update_fields=["status", "closed_at"])
    return locked


def study_close(study: Study) -> Study:
    """No more claims, labels or revisions until reopened."""
    return _study_status_set(study, StudyStatus.CLOSED)


def study_reopen(study: Study) -> Study:
    return _study_status_set(study, StudyStatus.OPEN)


def _taken(item_id: int, now: datetime, *, excluding: int | None = None) -> int:
    """Places held on an item: submitted labels and unexpired claims. Call with the item row locked."""
    rows = Assignment.objects.filter(item_id=item_id).filter(Q(submitted_at__isnull=False) | Q(expires_at__gt=now))
    if excluding is not None:
        rows = rows.exclude(annotator_id=excluding)
    return rows.count()


def _member_lock(study_id: int, annotator: User) -> StudyMember:
    """Serialises one annotator's requests in one study (a double click must not claim twice)."""
    try:
        member = _locked(StudyMember.objects.select_related("study")).get(study_id=study_id, user=annotator)
    except StudyMember.DoesNotExist:
        raise NotAMember("You are not an annotator of this study.") from None
    if not member.study.is_open:
        raise StudyClosed("This study is closed: labels can no longer be added or changed.")
    return member


def _claim_renew(own: Assignment, study: Study, now: datetime) -> bool:
    """Renew the annotator's expired claim if its place is still free; give it up otherwise."""
    item = _locked(StudyItem.objects).only("pk", "gold_c1").get(pk=own.item_id)
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
            _locked(StudyItem.objects.filter(pk=item_id), skip_locked=not wait)
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
        ordered = sampling.mix_gold(
            sampling.annotator_order([p.pk for p in places], study.seed, annotator.pk),
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


MAX_REASON = 2000


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
            _locked(StudyItem.objects.filter(pk=skip.item_id))
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


def study_guidelines_set(study: Study, *, guidelines: str, gold_rate: float) -> Study:
    errors = {}
    if len(guidelines) > settings.VERIHARM_MAX_DESCRIPTION_CHARS * 10:
        errors["guidelines"] = (
            f"is {len(guidelines)} characters long; at most {settings.VERIHARM_MAX_DESCRIPTION_CHARS * 10}"
        )
    if not 0 <= gold_rate <= 1:
        errors["gold_rate"] = f"must be a share from 0 to 1, got {gold_rate}"
    if errors:
        raise StudyRefused(errors)
    with transaction.atomic():
        locked = _locked(Study.objects).get(pk=study.pk)
        locked.guidelines, locked.gold_rate = guidelines.strip(), gold_rate
        locked.save(update_fields=["guidelines", "gold_rate"])
    return locked


def item_gold_set(item: StudyItem, answers: Answers | None) -> StudyItem:
    """Mark an item as gold with its known answers, or (None) make it an ordinary item again."""
    with transaction.atomic():
        locked = _locked(StudyItem.objects).get(pk=item.pk)
        locked.gold_c1, locked.gold_c2, locked.gold_c3 = (
            (answers.c1, answers.c2, answers.c3) if answers else (None, None, None)
        )
        locked.save(update_fields=["gold_c1", "gold_c2", "gold_c3"])
    return locked


def item_adjudicate(item: StudyItem, answers: Answers, *, reason: str, by: User) -> Adjudication:
    """Set (or replace) a curator's final label on an item; the annotators' labels stay as they are."""
    reason = reason.strip()
    if not reason:
        raise StudyRefused({"reason": "is required: say why this is the final label"})
    if len(reason) > MAX_REASON:
        raise StudyRefused({"reason": f"is {len(reason)} characters long; at most {MAX_REASON} are kept"})
    with transaction.atomic():
        _locked(StudyItem.objects).get(pk=item.pk)
        adjudication, _ = Adjudication.objects.update_or_create(
            item=item,
            defaults={
                "c1": answers.c1,
                "c2": answers.c2,
                "c3": answers.c3,
                "reason": reason,
                "decided_by": by,
                "decided_at": timezone.now(),
            },
        )
    return adjudication


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
        _locked(StudyItem.objects).get(pk=current.item_id)
    assignment = _locked(Assignment.objects.select_related("study")).filter(pk=current.pk).first()
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


def study_mark_demo(study: Study, kind: str) -> Study:
    """Say what is synthetic about a study the demo made (`models.DemoStudy`), for its pages."""
    if kind not in DemoStudy.values:
        raise ValueError(f"unknown demo kind {kind!r}")
    Study.objects.filter(pk=study.pk).update(demo=kind)
    study.demo = kind
    return study
