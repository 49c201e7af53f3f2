"""Writes of annotation studies, for curators: creating a study from the ranked pool, its members,
its status, its guidelines and gold items, and a curator's final label on an item.

Locks are taken in the order the annotators' writes take them (`annotation.write_rules.locking`).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from candidates.models import Candidate
from candidates.pool.selectors import candidate_group_ids, ranking_bounds

from ..models import (
    Adjudication,
    DemoStudy,
    DrawnFrom,
    Group,
    Routing,
    StratifyBy,
    Study,
    StudyItem,
    StudyMember,
    StudyStatus,
)
from ..write_rules.locking import rows_locked
from ..write_rules.refusals import MAX_REASON, AnnotationError
from . import sampling
from .drawing import Pool, drawn_pool
from .selectors.results import Answers

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User

# Upper bounds of a study's numbers: beyond them a value means nothing (a claim held for a month, a
# group larger than any pool) and would overflow the database's integer columns.
MAX_CLAIM_TIMEOUT_MINUTES = 30 * 24 * 60
MAX_GROUP_SIZE = 1_000_000
MAX_ANNOTATORS_PER_ITEM = 50
MAX_NAME = 200


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
    rows_locked(Study.objects).get(pk=study.pk)
    present = set(study.memberships.values_list("user_id", flat=True))
    new = [u for u in users if u.pk not in present]
    refused = _members_refusal(new)
    if refused:
        raise StudyRefused({"annotators": refused})
    return StudyMember.objects.bulk_create(_pseudonyms_assign(study, new, start=study.memberships.count() + 1))


def _study_status_set(study: Study, status: str) -> Study:
    with transaction.atomic():
        locked = rows_locked(Study.objects).get(pk=study.pk)
        locked.status = status
        locked.closed_at = timezone.now() if status == StudyStatus.CLOSED else None
        locked.save(update_fields=["status", "closed_at"])
    return locked


def study_close(study: Study) -> Study:
    """No more claims, labels or revisions until reopened."""
    return _study_status_set(study, StudyStatus.CLOSED)


def study_reopen(study: Study) -> Study:
    return _study_status_set(study, StudyStatus.OPEN)


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
        locked = rows_locked(Study.objects).get(pk=study.pk)
        locked.guidelines, locked.gold_rate = guidelines.strip(), gold_rate
        locked.save(update_fields=["guidelines", "gold_rate"])
    return locked


def item_gold_set(item: StudyItem, answers: Answers | None) -> StudyItem:
    """Mark an item as gold with its known answers, or (None) make it an ordinary item again."""
    with transaction.atomic():
        locked = rows_locked(StudyItem.objects).get(pk=item.pk)
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
        rows_locked(StudyItem.objects).get(pk=item.pk)
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


def study_mark_demo(study: Study, kind: str) -> Study:
    """Say what is synthetic about a study the demo made (`models.DemoStudy`), for its pages."""
    if kind not in DemoStudy.values:
        raise ValueError(f"unknown demo kind {kind!r}")
    Study.objects.filter(pk=study.pk).update(demo=kind)
    study.demo = kind
    return study
