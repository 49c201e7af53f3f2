"""Claiming and labelling: places per item, one label per annotator, expiry, revisions, closing."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.labelling import selectors as annotator_reads
from annotation.labelling import services as labelling_services
from annotation.labelling.order import annotator_order
from annotation.models import Assignment
from annotation.studies import services as study_services
from tests.annotation.conftest import label_all
from tests.conftest import make_user
from veriharm_site.roles import ANNOTATOR

pytestmark = pytest.mark.django_db

YES = labelling_services.LabelInput(True, True, True)


def expire(assignment: Assignment) -> None:
    """Move a claim into the past, as if its holder had walked away."""
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Assignment.objects.filter(pk=assignment.pk).update(
        claimed_at=an_hour_ago, expires_at=an_hour_ago + timedelta(minutes=5)
    )


def test_asking_again_returns_the_open_claim(pool, annotators, make_study):
    study = make_study(annotators)
    first = labelling_services.item_claim_next(study.pk, annotators[0])
    again = labelling_services.item_claim_next(study.pk, annotators[0])
    assert first.pk == again.pk
    assert Assignment.objects.filter(annotator=annotators[0]).count() == 1


def test_each_annotator_meets_the_items_in_their_own_order(pool, annotators, make_study):
    study = make_study(annotators, annotators_per_item=3)
    item_ids = list(study.items.values_list("pk", flat=True))
    seen = {}
    for annotator in annotators:
        order = []
        while (a := labelling_services.item_claim_next(study.pk, annotator)) is not None:
            order.append(a.item_id)
            labelling_services.label_submit(study.pk, a.item.token, annotator, YES)
        seen[annotator.pk] = order
        assert order == annotator_order(item_ids, study.seed, annotator.pk)
    assert len({tuple(o) for o in seen.values()}) == 3


def test_no_item_gets_more_labels_than_its_annotator_count(pool, make_study):
    people = [make_user(f"p{i}", ANNOTATOR) for i in range(5)]
    study = make_study(people, annotators_per_item=2)
    totals = [label_all(study, person, lambda n: (True, False, True)) for person in people]
    assert sum(totals) == 8 * 2
    for item in study.items.all():
        assert item.assignments.filter(submitted_at__isnull=False).count() == 2
    # Everyone is done; nobody gets anything more.
    assert all(labelling_services.item_claim_next(study.pk, p) is None for p in people)
    assert all(annotator_reads.annotator_progress(study, p).finished for p in people)


def test_the_database_refuses_a_second_label_and_a_second_open_claim(pool, annotators, make_study):
    study = make_study(annotators)
    a = labelling_services.item_claim_next(study.pk, annotators[0])
    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(
            study=study,
            item=a.item,
            annotator=annotators[0],
            claimed_at=now,
            expires_at=now,
            submitted_at=now,
            c1=True,
            c2=True,
            c3=True,
        )
    other = study.items.exclude(pk=a.item_id).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(study=study, item=other, annotator=annotators[0], claimed_at=now, expires_at=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.filter(pk=a.pk).update(submitted_at=now)  # submitted without answers


def test_an_expired_claim_goes_back_to_the_pool(pool, make_study):
    people = [make_user(f"p{i}", ANNOTATOR) for i in range(3)]
    study = make_study(people, annotators_per_item=1, per_group=1, top_k=10, stratify_by="")
    slow = labelling_services.item_claim_next(study.pk, people[0])
    labelling_services.item_claim_next(study.pk, people[1])  # takes the other item
    assert labelling_services.item_claim_next(study.pk, people[2]) is None  # both places are held

    expire(slow)
    fast = labelling_services.item_claim_next(study.pk, people[2])
    assert fast.item_id == slow.item_id
    labelling_services.label_submit(study.pk, fast.item.token, people[2], YES)
    with pytest.raises(labelling_services.ClaimLost, match="went to another annotator"):
        labelling_services.label_submit(study.pk, slow.item.token, people[0], YES)
    assert not Assignment.objects.filter(pk=slow.pk).exists()
    assert study.items.get(pk=slow.item_id).assignments.count() == 1


def test_an_expired_claim_still_counts_when_nobody_took_its_place(pool, annotators, make_study):
    study = make_study(annotators, claim_timeout_minutes=5)
    a = labelling_services.item_claim_next(study.pk, annotators[0])
    expire(a)
    labelling_services.label_submit(study.pk, a.item.token, annotators[0], YES)
    assert Assignment.objects.get(pk=a.pk).submitted
    # And an expired open claim is given back to its holder on the next request if still free.
    b = labelling_services.item_claim_next(study.pk, annotators[0])
    expire(b)
    renewed = labelling_services.item_claim_next(study.pk, annotators[0])
    assert renewed.pk == b.pk and Assignment.objects.get(pk=b.pk).expires_at > timezone.now()


def test_labels_can_be_revised_until_the_study_is_closed(pool, annotators, make_study):
    study = make_study(annotators)
    a = labelling_services.item_claim_next(study.pk, annotators[0])
    labelling_services.label_submit(
        study.pk,
        a.item.token,
        annotators[0],
        labelling_services.LabelInput(True, True, False, "first look", seconds_spent=40),
    )
    revised = labelling_services.label_submit(
        study.pk,
        a.item.token,
        annotators[0],
        labelling_services.LabelInput(True, True, True, "on reflection", seconds_spent=15),
    )
    assert (revised.c3, revised.valid, revised.comment, revised.revisions) == (True, True, "on reflection", 1)
    assert revised.seconds_spent == pytest.approx(55)

    study_services.study_close(study)
    with pytest.raises(labelling_services.StudyClosed):
        labelling_services.label_submit(study.pk, a.item.token, annotators[0], YES)
    with pytest.raises(labelling_services.StudyClosed):
        labelling_services.item_claim_next(study.pk, annotators[1])
    assert Assignment.objects.get(pk=a.pk).comment == "on reflection"
    study_services.study_reopen(study)
    assert labelling_services.item_claim_next(study.pk, annotators[1]) is not None


def test_time_spent_falls_back_to_the_time_since_the_claim(pool, annotators, make_study):
    study = make_study(annotators)
    a = labelling_services.item_claim_next(study.pk, annotators[0])
    Assignment.objects.filter(pk=a.pk).update(claimed_at=timezone.now() - timedelta(seconds=90))
    labelled = labelling_services.label_submit(study.pk, a.item.token, annotators[0], YES)
    assert 90 <= labelled.seconds_spent < 100


def test_only_members_claim_and_only_holders_label(pool, annotators, make_study):
    study = make_study(annotators)
    stranger = make_user("stranger", ANNOTATOR)
    with pytest.raises(labelling_services.NotAMember):
        labelling_services.item_claim_next(study.pk, stranger)
    a = labelling_services.item_claim_next(study.pk, annotators[0])
    with pytest.raises(labelling_services.NotYourItem):
        labelling_services.label_submit(study.pk, a.item.token, annotators[1], YES)
    with pytest.raises(labelling_services.AnnotationError, match="at most 5000"):
        labelling_services.label_submit(
            study.pk, a.item.token, annotators[0], labelling_services.LabelInput(True, True, True, "x" * 5001)
        )


def test_progress_counts_done_and_assigned(pool, annotators, make_study):
    study = make_study(annotators)  # 8 items, 3 annotators each: everyone is assigned every item
    progress = annotator_reads.annotator_progress(study, annotators[0])
    assert (progress.done, progress.assigned) == (0, 8)
    a = labelling_services.item_claim_next(study.pk, annotators[0])
    labelling_services.label_submit(study.pk, a.item.token, annotators[0], YES)
    labelling_services.item_claim_next(study.pk, annotators[0])
    progress = annotator_reads.annotator_progress(study, annotators[0])
    assert (progress.done, progress.claimed, progress.assigned) == (1, True, 8)
