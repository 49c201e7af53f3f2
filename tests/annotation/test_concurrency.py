"""30 annotators claim and label at once, each thread on its own PostgreSQL connection."""

import random
import threading
import time
from collections import Counter

import pytest
from django.db import connection, connections

from annotation.labelling import services as labelling_services
from annotation.models import Assignment
from annotation.studies import services as study_services
from tests.conftest import make_user
from veriharm_site.roles import ANNOTATOR

ANNOTATORS = 30


@pytest.mark.django_db(transaction=True)
def test_thirty_annotators_fill_the_study_exactly(pool, make_study):
    assert connection.vendor == "postgresql"
    people = [make_user(f"crowd-{i:02d}", ANNOTATOR) for i in range(ANNOTATORS)]
    study = make_study(people, top_k=20, per_group=10, annotators_per_item=3, stratify_by="")
    items = study.items.count()
    start = threading.Barrier(ANNOTATORS)
    errors: list[BaseException] = []
    labelled: Counter = Counter()

    def work(person, seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            while (assignment := labelling_services.item_claim_next(study.pk, person)) is not None:
                time.sleep(rng.uniform(0, 0.004))  # reading the item; lets other claims interleave
                labelling_services.label_submit(
                    study.pk,
                    assignment.item.token,
                    person,
                    labelling_services.LabelInput(rng.random() < 0.7, rng.random() < 0.8, True),
                )
                labelled[person.pk] += 1
        except BaseException as error:  # noqa: BLE001 - re-raised in the main thread below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(p, i)) for i, p in enumerate(people)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors

    per_item = Counter(
        Assignment.objects.filter(study=study, submitted_at__isnull=False).values_list("item_id", flat=True)
    )
    assert len(per_item) == items == 20
    assert set(per_item.values()) == {3}
    assert not Assignment.objects.filter(study=study, submitted_at__isnull=True).exists()
    assert sum(labelled.values()) == items * 3
    pairs = Assignment.objects.filter(study=study).values_list("item_id", "annotator_id")
    assert len(set(pairs)) == len(pairs)  # nobody labelled an item twice
    assert len(labelled) > 3  # the work really was shared out


@pytest.mark.django_db(transaction=True)
def test_a_claim_waits_for_the_last_free_item_rather_than_reporting_done(pool, make_study):
    people = [make_user(f"p{i}", ANNOTATOR) for i in range(2)]
    study = make_study(people, per_group=1, annotators_per_item=1, stratify_by="")
    taken = labelling_services.item_claim_next(study.pk, people[0])
    last = study.items.exclude(pk=taken.item_id).get()
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        # Another transaction holding the item row, as a concurrent claimer does for a moment.
        from django.db import transaction

        from annotation.models import StudyItem

        try:
            with transaction.atomic():
                StudyItem.objects.select_for_update().get(pk=last.pk)
                locked.set()
                release.wait(5)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    assert locked.wait(5)
    threading.Timer(0.3, release.set).start()
    started = time.monotonic()
    claimed = labelling_services.item_claim_next(study.pk, people[1])
    holder.join(5)
    assert claimed is not None and claimed.item_id == last.pk
    assert time.monotonic() - started >= 0.25  # it waited for the lock instead of giving up


@pytest.mark.django_db(transaction=True)
def test_closing_waits_for_a_label_in_flight_and_later_labels_are_refused(pool, make_study, annotators):
    from django.db import transaction

    from annotation.models import Study, StudyStatus

    study = make_study(annotators, top_k=10, per_group=2, stratify_by="")
    first, second = annotators[:2]
    mine = labelling_services.item_claim_next(study.pk, first)
    theirs = labelling_services.item_claim_next(study.pk, second)
    closed = threading.Event()

    def close() -> None:
        try:
            study_services.study_close(Study.objects.get(pk=study.pk))
            closed.set()
        finally:
            connections.close_all()

    with transaction.atomic():
        # A label in flight: its transaction has checked that the study is open and not yet committed.
        labelling_services._label_save(
            study.pk, mine.item.token, first, labelling_services.LabelInput(True, True, True)
        )
        closer = threading.Thread(target=close)
        closer.start()
        assert not closed.wait(1.0), "closing must wait for the label in flight"
    closer.join(10)
    assert closed.is_set() and Study.objects.get(pk=study.pk).status == StudyStatus.CLOSED
    assert Assignment.objects.get(pk=mine.pk).submitted_at is not None
    with pytest.raises(labelling_services.StudyClosed):
        labelling_services.label_submit(
            study.pk, theirs.item.token, second, labelling_services.LabelInput(True, True, True)
        )
    assert Assignment.objects.get(pk=theirs.pk).submitted_at is None
