"""The per-item table of a study's results, sorted, filtered and searched: the page and the items API
read the same parameters; the figures above the table still cover every item."""

from __future__ import annotations

import re

import pytest

from annotation.labelling import services as labelling_services
from annotation.models import Study
from annotation.studies import services as study_services
from annotation.studies.selectors.results import Answers
from tests.annotation.conftest import import_pool

pytestmark = pytest.mark.django_db

VALID = (True, True, True)
INVALID = (True, False, True)


def _answer(number: int, position: int) -> tuple[bool, bool, bool]:
    valid = number % 2 == 1
    if number == 2 and position == 2:
        valid = True  # the third annotator dissents on item 2 only
    return VALID if valid else INVALID


@pytest.fixture
def study(annotators, make_study, curator) -> Study:
    """Six items: the odd ones valid by majority, the even ones invalid; item 2 disputed; item 1 gold;
    item 4 adjudicated; every label on item n took n × 10 seconds."""
    import_pool(8)
    study = make_study(annotators, top_k=4, per_group=3, stratify_by="perturbation")
    for position, annotator in enumerate(annotators):
        while (a := labelling_services.item_claim_next(study.pk, annotator)) is not None:
            number = a.item.number
            label = labelling_services.LabelInput(*_answer(number, position), seconds_spent=number * 10.0)
            labelling_services.label_submit(study.pk, a.item.token, annotator, label)
    study_services.item_gold_set(study.items.get(number=1), Answers(*VALID))
    study_services.item_adjudicate(study.items.get(number=4), Answers(*VALID), reason="the test is fine", by=curator)
    return study


def page_items(client, study: Study, **params) -> list[int]:
    response = client.get(f"/annotation/studies/{study.pk}/results/", params)
    assert response.status_code == 200, response.content[:500]
    table = response.content.decode().split('data-testid="items"')[1].split("</table>")[0]
    return [int(n) for n in re.findall(r'data-item="(\d+)"', table)]


def api_items(client, study: Study, **params) -> list[int]:
    response = client.get(f"/api/annotation/studies/{study.pk}/items/", params)
    assert response.status_code == 200, response.content[:500]
    return [item["item"] for item in response.json()]


def both(client, study: Study, **params) -> list[int]:
    on_page = page_items(client, study, **params)
    assert api_items(client, study, **params) == on_page
    return on_page


def test_sorting_changes_the_order(study, curator_client):
    assert both(curator_client, study) == [1, 2, 3, 4, 5, 6]
    assert both(curator_client, study, sort="-item") == [6, 5, 4, 3, 2, 1]
    assert both(curator_client, study, sort="-time") == [6, 5, 4, 3, 2, 1]
    assert both(curator_client, study, sort="agreement") == [2, 1, 3, 4, 5, 6]  # the disputed one first
    assert both(curator_client, study, sort="majority") == [1, 3, 5, 2, 4, 6]
    quality = dict(study.items.values_list("number", "quality_at_sampling"))
    by_quality = sorted(quality, key=lambda n: (-quality[n], n))
    assert both(curator_client, study, sort="-quality") == by_quality


def test_filters_and_search_narrow_the_table(study, curator_client):
    assert both(curator_client, study, majority="valid") == [1, 3, 5]
    assert both(curator_client, study, majority="invalid") == [2, 4, 6]
    assert both(curator_client, study, majority="none") == []
    assert both(curator_client, study, disputed="1") == [2]
    assert both(curator_client, study, gold="1") == [1]
    assert both(curator_client, study, adjudicated="1") == [4]
    top = sorted(study.items.filter(group="top").values_list("number", flat=True))
    assert both(curator_client, study, group="top") == top
    third = study.items.select_related("candidate__source_task").get(number=3).candidate
    assert both(curator_client, study, q=third.external_id.upper()) == [3]
    assert 3 in both(curator_client, study, q=third.source_task.external_id)
    assert both(curator_client, study, majority="invalid", sort="-item", disputed="") == [6, 4, 2]


def test_a_narrowed_table_says_so_and_the_figures_still_cover_every_item(study, curator_client):
    html = curator_client.get(f"/annotation/studies/{study.pk}/results/", {"disputed": "1"}).content.decode()
    assert "Showing 1 of 6 items" in html
    summary = html.split('data-testid="summary"')[1].split("</section>")[0]
    assert re.search(r"Items complete</span><span><b>\d+</b> / 6", summary)


@pytest.mark.parametrize(
    "params, field",
    [({"sort": "votes"}, "sort"), ({"majority": "maybe"}, "majority"), ({"gold": "perhaps"}, "gold")],
)
def test_bad_values_are_refused_by_name_on_the_page_and_the_api(study, curator_client, params, field):
    page = curator_client.get(f"/annotation/studies/{study.pk}/results/", params)
    assert page.status_code == 400 and f"<b>{field}</b>" in page.content.decode()
    api = curator_client.get(f"/api/annotation/studies/{study.pk}/items/", params)
    assert api.status_code == 400 and [e["field"] for e in api.json()["errors"]] == [field]


def test_annotators_never_reach_the_table(study, annotators):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(annotators[0])
    assert client.get(f"/annotation/studies/{study.pk}/results/", {"sort": "-quality"}).status_code == 403
    assert client.get(f"/api/annotation/studies/{study.pk}/items/", {"sort": "-quality"}).status_code == 403
