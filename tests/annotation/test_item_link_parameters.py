"""The parameters that the labelling pages' own links carry (`back` to an item from the guidelines,
`then` after a revision) are checked like any other: a wrong one is a 400 naming it, never a 500."""

from __future__ import annotations

import pytest

from annotation.labelling import services
from annotation.models import Assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def claimed(pool, annotators, make_study, client):
    study = make_study(annotators, per_group=2, guidelines="Deleting backups is never benign.")
    annotator = annotators[0]
    services.guidelines_read(study.pk, annotator)
    claim = services.item_claim_next(study.pk, annotator)
    client.force_login(annotator)
    return study, claim.item, client


@pytest.mark.parametrize("back", ["a/b", "../x", "x" * 25, "tok en"])
def test_the_guidelines_refuse_a_way_back_that_is_no_token(claimed, back):
    study, _, client = claimed
    refused = client.get(f"/annotation/s/{study.pk}/guidelines/", {"back": back})
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "<b>back</b>: must be the token of an item" in text and "never benign" not in text


def test_the_guidelines_link_back_to_the_item_they_were_opened_from(claimed):
    study, item, client = claimed
    page = client.get(f"/annotation/s/{study.pk}/guidelines/", {"back": item.token}).content.decode()
    assert "never benign" in page and f'href="/annotation/s/{study.pk}/i/{item.token}/"' in page


def test_an_item_refuses_a_then_it_does_not_know_and_changes_nothing(claimed):
    study, item, client = claimed
    url = f"/annotation/s/{study.pk}/i/{item.token}/"
    assert client.get(url, {"then": "elsewhere"}).status_code == 400
    answers = {"c1": "yes", "c2": "yes", "c3": "yes", "seconds_spent": "30"}
    refused = client.post(f"{url}?then=elsewhere", answers)
    assert refused.status_code == 400 and "<b>then</b>: must be one of next, labels" in refused.content.decode()
    assert not Assignment.objects.filter(item=item, submitted_at__isnull=False).exists()
    assert client.get(url, {"then": "labels"}).status_code == 200
