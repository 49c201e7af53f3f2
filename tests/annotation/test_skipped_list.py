"""The items an annotator set aside: listed on their page and in the API, each with a way back to
label it (giving up an unlabelled item held meanwhile); refused, changing nothing, when it is not
theirs or when others took its places meanwhile."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.labelling import services
from annotation.models import Assignment, ItemSkip

pytestmark = pytest.mark.django_db


def _state() -> tuple[list, list]:
    return (
        sorted(Assignment.objects.values_list("item_id", "annotator_id", "submitted_at", "expires_at")),
        sorted(ItemSkip.objects.values_list("item_id", "annotator_id", "returned_at")),
    )


def _skip_one(study, annotator, *, unclear: bool = False, reason: str = "") -> Assignment:
    claim = services.item_claim_next(study.pk, annotator)
    assert claim is not None
    services.item_skip(study.pk, claim.item.token, annotator, unclear=unclear, reason=reason)
    return claim


def test_the_set_aside_page_lists_skipped_items_and_labels_one_from_there(pool, annotators, make_study, client: Client):
    study = make_study(annotators, per_group=2)
    me = annotators[0]
    plain = _skip_one(study, me)
    flagged = _skip_one(study, me, unclear=True, reason="the harm test reads a file the task never names")
    client.force_login(me)

    page = client.get(f"/annotation/s/{study.pk}/set-aside/").content.decode()
    assert page.count('data-testid="skipped-item"') == 2
    assert f'<td class="num">{plain.item.number}</td>' in page
    assert "the harm test reads a file the task never names" in page
    assert page.count("Label it now") == 1 and page.count("Label it anyway") == 1
    assert "2 items you set aside" in client.get(f"/annotation/s/{study.pk}/labels/").content.decode()

    back = client.post(f"/annotation/s/{study.pk}/i/{flagged.item.token}/return/")
    assert back.status_code == 302 and back.url == f"/annotation/s/{study.pk}/i/{flagged.item.token}/"
    assert client.get(back.url).status_code == 200
    saved = client.post(back.url, {"c1": "yes", "c2": "no", "c3": "yes", "then": "labels"})
    assert saved.status_code == 302
    label = Assignment.objects.get(item=flagged.item, annotator=me)
    assert label.submitted_at is not None and (label.c1, label.c2, label.c3) == (True, False, True)

    page = client.get(f"/annotation/s/{study.pk}/set-aside/").content.decode()
    assert page.count('data-testid="skipped-item"') == 1
    assert f'<td class="num">{plain.item.number}</td>' in page


def test_the_api_lists_skipped_items_and_returns_to_one(pool, annotators, make_study):
    study = make_study(annotators, per_group=2)
    me = annotators[0]
    first = _skip_one(study, me)
    second = _skip_one(study, me, unclear=True, reason="unclear")
    api = APIClient()
    api.force_authenticate(me)

    listed = api.get(f"/api/annotation/my/studies/{study.pk}/skipped/").json()
    assert [(row["item"], row["token"], row["unclear"], row["open"]) for row in listed] == [
        (second.item.number, second.item.token, True, True),
        (first.item.number, first.item.token, False, True),
    ]
    back = api.post(f"/api/annotation/my/studies/{study.pk}/items/{first.item.token}/return/")
    assert back.status_code == 200
    assert back.json()["item"]["token"] == first.item.token
    # Asked again (a second click), it answers the same claim.
    again = api.post(f"/api/annotation/my/studies/{study.pk}/items/{first.item.token}/return/")
    assert again.status_code == 200 and again.json()["item"]["token"] == first.item.token
    assert Assignment.objects.filter(annotator=me, submitted_at__isnull=True).count() == 1
    assert [row["token"] for row in api.get(f"/api/annotation/my/studies/{study.pk}/skipped/").json()] == [
        second.item.token
    ]
    labelled = api.put(
        f"/api/annotation/my/studies/{study.pk}/items/{first.item.token}/label/",
        {"c1": True, "c2": True, "c3": True},
        format="json",
    )
    assert labelled.status_code == 200 and labelled.json()["label"]["submitted"] is True


def test_coming_back_gives_up_the_unlabelled_item_held_which_comes_again_later(pool, annotators, make_study):
    study = make_study(annotators, per_group=2)
    me = annotators[0]
    skipped = _skip_one(study, me)
    held = services.item_claim_next(study.pk, me)
    assert held is not None and held.item_id != skipped.item_id
    api = APIClient()
    api.force_authenticate(me)

    back = api.post(f"/api/annotation/my/studies/{study.pk}/items/{skipped.item.token}/return/")
    assert back.status_code == 200 and back.json()["item"]["token"] == skipped.item.token
    assert list(Assignment.objects.filter(annotator=me).values_list("item_id", flat=True)) == [skipped.item_id]
    services.label_submit(study.pk, skipped.item.token, me, services.LabelInput(True, True, True))
    # The item given up is not among the skipped ones: it comes again in the annotator's order.
    assert held.item.token not in [
        row["token"] for row in api.get(f"/api/annotation/my/studies/{study.pk}/skipped/").json()
    ]
    offered = set()
    while (claim := services.item_claim_next(study.pk, me)) is not None:
        offered.add(claim.item_id)
        services.label_submit(study.pk, claim.item.token, me, services.LabelInput(True, True, True))
    assert held.item_id in offered


def test_an_item_that_is_not_your_skipped_item_is_not_found_and_nothing_changes(
    pool, annotators, make_study, client: Client
):
    study = make_study(annotators, per_group=2)
    me, other = annotators[0], annotators[1]
    mine = _skip_one(study, me)
    never_skipped = study.items.exclude(pk=mine.item_id).first()
    before = _state()
    api = APIClient()
    api.force_authenticate(other)
    # Another annotator of the study, knowing the token, cannot take my skipped item through it.
    assert api.post(f"/api/annotation/my/studies/{study.pk}/items/{mine.item.token}/return/").status_code == 404
    api.force_authenticate(me)
    assert api.post(f"/api/annotation/my/studies/{study.pk}/items/{never_skipped.token}/return/").status_code == 404
    client.force_login(other)
    assert client.post(f"/annotation/s/{study.pk}/i/{mine.item.token}/return/").status_code == 404
    assert b'data-testid="skipped-item"' not in client.get(f"/annotation/s/{study.pk}/set-aside/").content
    assert _state() == before


def test_an_item_whose_places_others_took_is_shown_so_and_cannot_be_taken(pool, annotators, make_study, client: Client):
    study = make_study(annotators, per_group=2, annotators_per_item=1)
    me, other = annotators[0], annotators[1]
    skipped = _skip_one(study, me)
    while (claim := services.item_claim_next(study.pk, other)) is not None:
        services.label_submit(study.pk, claim.item.token, other, services.LabelInput(True, True, True))
    api = APIClient()
    api.force_authenticate(me)
    assert api.get(f"/api/annotation/my/studies/{study.pk}/skipped/").json()[0]["open"] is False
    client.force_login(me)
    page = client.get(f"/annotation/s/{study.pk}/set-aside/").content.decode()
    assert "Labelled by others meanwhile" in page and "Label it now" not in page
    before = _state()
    refused = api.post(f"/api/annotation/my/studies/{study.pk}/items/{skipped.item.token}/return/")
    assert refused.status_code == 409
    assert _state() == before
    page_refused = client.post(f"/annotation/s/{study.pk}/i/{skipped.item.token}/return/", follow=True)
    assert "Other annotators have taken every place" in page_refused.content.decode()
    assert _state() == before
