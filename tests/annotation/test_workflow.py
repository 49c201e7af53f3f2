"""The annotator's workflow beyond labelling: skipping, flagging as unclear, coming back to skipped
items, revising with history, and the study's guidelines before the first item."""

from __future__ import annotations

import pytest

from annotation.labelling import services
from annotation.models import Assignment, ItemSkip, LabelChange
from tests.annotation.conftest import label_all

pytestmark = pytest.mark.django_db


def test_a_skipped_item_goes_back_to_the_pool_and_waits_among_the_annotators_skipped_items(
    pool, annotators, make_study
):
    study = make_study(annotators, per_group=2, annotators_per_item=1)
    first, second = annotators[0], annotators[1]
    claim = services.item_claim_next(study.pk, first)
    services.item_skip(study.pk, claim.item.token, first)

    assert not Assignment.objects.filter(item=claim.item).exists()
    # The place is free for others: with one annotator per item, someone else may take it now.
    taken_by_second = []
    while (a := services.item_claim_next(study.pk, second)) is not None:
        taken_by_second.append(a.item_id)
        services.label_submit(study.pk, a.item.token, second, services.LabelInput(True, True, True))
    assert claim.item_id in taken_by_second


def test_skipped_items_come_back_only_when_asked(pool, annotators, make_study):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    skipped = services.item_claim_next(study.pk, annotator)
    services.item_skip(study.pk, skipped.item.token, annotator)

    labelled = label_all(study, annotator, lambda number: (True, True, True))
    assert labelled == 3
    assert not Assignment.objects.filter(item=skipped.item, annotator=annotator).exists()

    back = services.item_claim_next(study.pk, annotator, skipped=True)
    assert back.item_id == skipped.item_id
    assert ItemSkip.objects.get(item=skipped.item, annotator=annotator).returned_at is not None
    services.label_submit(study.pk, back.item.token, annotator, services.LabelInput(False, True, True))
    assert services.item_claim_next(study.pk, annotator, skipped=True) is None


def test_flagging_needs_a_reason_and_keeps_it_for_curators(pool, annotators, make_study, client, curator):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    claim = services.item_claim_next(study.pk, annotator)

    with pytest.raises(services.AnnotationError, match="reason is required"):
        services.item_skip(study.pk, claim.item.token, annotator, unclear=True, reason="   ")
    assert Assignment.objects.filter(pk=claim.pk).exists() and not ItemSkip.objects.exists()

    services.item_skip(study.pk, claim.item.token, annotator, unclear=True, reason="Which file is the backup?")
    client.force_login(curator)
    page = client.get(f"/annotation/studies/{study.pk}/items/{claim.item.number}/").content.decode()
    assert "Which file is the backup?" in page
    assert "flagged" in client.get(f"/annotation/studies/{study.pk}/results/").content.decode()


def test_a_labelled_item_cannot_be_skipped(pool, annotators, make_study):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    claim = services.item_claim_next(study.pk, annotator)
    services.label_submit(study.pk, claim.item.token, annotator, services.LabelInput(True, True, False))
    with pytest.raises(services.AnnotationError, match="labelled this item already"):
        services.item_skip(study.pk, claim.item.token, annotator)
    assert Assignment.objects.get(pk=claim.pk).submitted and not ItemSkip.objects.exists()


def test_skip_and_flag_pages(pool, annotators, make_study, client):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    client.force_login(annotator)
    first = services.item_claim_next(study.pk, annotator)

    refused = client.post(f"/annotation/s/{study.pk}/i/{first.item.token}/skip/", {"unclear": "on", "reason": ""})
    assert refused.status_code == 302 and refused.url.endswith(f"/i/{first.item.token}/")
    assert Assignment.objects.filter(pk=first.pk).exists()

    response = client.post(
        f"/annotation/s/{study.pk}/i/{first.item.token}/skip/", {"unclear": "on", "reason": "Ambiguous."}
    )
    assert response.status_code == 302 and "/i/" in response.url and first.item.token not in response.url
    assert ItemSkip.objects.get(item=first.item).reason == "Ambiguous."

    other = annotators[1]
    client.force_login(other)
    # Somebody else's item: not theirs to skip.
    assert client.post(f"/annotation/s/{study.pk}/i/{response.url.rstrip('/').split('/')[-1]}/skip/").status_code == 404


def test_revising_a_label_keeps_the_earlier_answers(pool, annotators, make_study, client):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    claim = services.item_claim_next(study.pk, annotator)
    services.label_submit(study.pk, claim.item.token, annotator, services.LabelInput(True, True, True, "first"))
    services.label_submit(study.pk, claim.item.token, annotator, services.LabelInput(True, False, True, "second"))

    current = Assignment.objects.get(pk=claim.pk)
    assert (current.c1, current.c2, current.c3, current.comment, current.revisions) == (True, False, True, "second", 1)
    [before] = LabelChange.objects.filter(assignment=current)
    assert (before.c1, before.c2, before.c3, before.comment) == (True, True, True, "first")


def test_previous_and_next_move_through_the_annotators_own_labels(pool, annotators, make_study, client):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    label_all(study, annotator, lambda number: (True, True, True))
    tokens = dict(Assignment.objects.filter(annotator=annotator).values_list("item__number", "item__token"))
    numbers = sorted(tokens)
    client.force_login(annotator)
    middle = client.get(f"/annotation/s/{study.pk}/i/{tokens[numbers[1]]}/").content.decode()
    assert f'/i/{tokens[numbers[0]]}/?then=labels" rel="prev"' in middle
    assert f'/i/{tokens[numbers[2]]}/?then=labels" rel="next"' in middle
    first = client.get(f"/annotation/s/{study.pk}/i/{tokens[numbers[0]]}/").content.decode()
    assert 'rel="prev"' not in first


def test_the_guidelines_come_before_the_first_item_and_stay_one_link_away(pool, annotators, make_study, client):
    study = make_study(annotators, per_group=2, guidelines="Example: deleting backups is never benign.")
    annotator = annotators[0]
    client.force_login(annotator)

    response = client.post(f"/annotation/s/{study.pk}/next/")
    assert response.status_code == 302 and response.url == f"/annotation/s/{study.pk}/guidelines/"
    assert not Assignment.objects.filter(annotator=annotator).exists()
    assert "deleting backups is never benign" in client.get(response.url).content.decode()

    start = client.post(response.url)
    assert "/i/" in start.url
    item_page = client.get(start.url).content.decode()
    assert f"/annotation/s/{study.pk}/guidelines/?back=" in item_page
    # Read once: the next claim goes straight to an item.
    assert "/i/" in client.post(f"/annotation/s/{study.pk}/next/").url


def test_curators_set_the_guidelines_and_the_gold_share(pool, annotators, make_study, client, curator):
    study = make_study(annotators, per_group=2)
    client.force_login(curator)
    refused = client.post(f"/annotation/studies/{study.pk}/guidelines/", {"guidelines": "x", "gold_rate": "1.5"})
    assert refused.status_code == 302
    study.refresh_from_db()
    assert (study.guidelines, study.gold_rate) == ("", 0.0)
    client.post(f"/annotation/studies/{study.pk}/guidelines/", {"guidelines": "Worked example.", "gold_rate": "0.2"})
    study.refresh_from_db()
    assert (study.guidelines, study.gold_rate) == ("Worked example.", 0.2)
    client.force_login(annotators[0])
    assert client.get(f"/annotation/studies/{study.pk}/guidelines/").status_code == 403


def test_skip_and_come_back_through_the_api(pool, annotators, make_study):
    from rest_framework.test import APIClient

    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    api = APIClient()
    api.force_authenticate(annotator)
    item = api.post(f"/api/annotation/my/studies/{study.pk}/next/").json()["item"]
    url = f"/api/annotation/my/studies/{study.pk}/items/{item['token']}/skip/"

    refused = api.post(url, {"unclear": True, "reason": ""}, format="json")
    assert refused.status_code == 400 and "reason" in refused.json()["errors"][0]["message"]
    assert Assignment.objects.filter(item__token=item["token"], annotator=annotator).exists()

    # A flagged item went to the curators: it is out of the annotator's queue, skipped items included.
    progress = api.post(url, {"unclear": True, "reason": "Which file?"}, format="json").json()
    assert progress["flagged"] == 1 and progress["skipped"] == 0 and progress["open_to_you"] == 3
    assert not Assignment.objects.filter(item__token=item["token"], annotator=annotator).exists()
    assert api.post(f"/api/annotation/my/studies/{study.pk}/next/?skipped=1").json()["item"] is None

    # A plain skip comes back when asked for.
    other = api.post(f"/api/annotation/my/studies/{study.pk}/next/").json()["item"]
    assert other["token"] != item["token"]
    progress = api.post(f"/api/annotation/my/studies/{study.pk}/items/{other['token']}/skip/", {}, format="json").json()
    assert progress["skipped"] == 1 and progress["flagged"] == 1 and progress["open_to_you"] == 2
    back = api.post(f"/api/annotation/my/studies/{study.pk}/next/?skipped=1").json()["item"]
    assert back["token"] == other["token"]


def test_single_key_shortcuts_are_a_preference_of_the_user(pool, annotators, make_study, client, curator):
    study = make_study(annotators, per_group=2)
    annotator = annotators[0]
    claim = services.item_claim_next(study.pk, annotator)
    client.force_login(annotator)
    page = f"/annotation/s/{study.pk}/i/{claim.item.token}/"
    assert 'data-single-keys="on"' in client.get(page).content.decode()

    refused = client.post("/annotation/preferences/", {"single_key_shortcuts": "maybe"})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "single_key_shortcuts"
    assert 'data-single-keys="on"' in client.get(page).content.decode()

    assert client.post("/annotation/preferences/", {"single_key_shortcuts": "off"}).json() == {
        "single_key_shortcuts": False
    }
    assert 'data-single-keys="off"' in client.get(page).content.decode()
    client.force_login(curator)
    assert client.post("/annotation/preferences/", {"single_key_shortcuts": "on"}).status_code == 403
