"""A viewer reads a study's results, pages and API, and changes nothing: no study created, closed,
reopened, joined, adjudicated or marked gold; no identities in exports, no user names of annotators."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Adjudication, Study, StudyItem, StudyMember
from tests.annotation.conftest import label_all
from tests.conftest import make_user
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled_study(pool, annotators, make_study) -> Study:
    study = make_study(annotators, per_group=2, annotators_per_item=1)
    label_all(study, annotators[0], lambda number: (True, number % 2 == 0, True))
    return study


@pytest.fixture
def viewer(db):
    return make_user("reader", VIEWER)


def _state() -> list:
    return [
        sorted(Study.objects.values_list("pk", "status", "guidelines", "gold_rate")),
        sorted(StudyMember.objects.values_list("study_id", "user_id")),
        sorted(StudyItem.objects.values_list("pk", "gold_c1")),
        Adjudication.objects.count(),
    ]


def test_a_viewer_reads_the_results_pages(labelled_study, viewer, client: Client):
    client.force_login(viewer)
    pk = labelled_study.pk
    assert labelled_study.name in client.get("/annotation/studies/").content.decode()
    for url in (
        f"/annotation/studies/{pk}/",
        f"/annotation/studies/{pk}/results/",
        f"/annotation/studies/{pk}/disagreement/",
        f"/annotation/studies/{pk}/annotators/",
        f"/annotation/studies/{pk}/items/1/",
        f"/annotation/studies/{pk}/export/items.csv",
        f"/annotation/studies/{pk}/export/labels.csv",
    ):
        assert client.get(url).status_code == 200, url
    results = client.get(f"/annotation/studies/{pk}/results/").content.decode()
    assert "Confusion matrix" in results
    detail = client.get(f"/annotation/studies/{pk}/").content.decode()
    # What a curator acts with is not offered, and annotators are known by pseudonym only.
    for absent in ("Close the study", "study-members", "guidelines-form", "annotator-1", "annotator-2"):
        assert absent not in detail, absent
    assert "A1" in detail
    item = client.get(f"/annotation/studies/{pk}/items/1/").content.decode()
    assert "Set the final label" not in item and "Mark as gold" not in item
    assert "annotator-1" not in client.get(f"/annotation/studies/{pk}/annotators/").content.decode()
    assert "Studies" in client.get("/candidates/").content.decode()


def test_a_viewer_reads_the_results_api(labelled_study, viewer):
    api = APIClient()
    api.force_authenticate(viewer)
    pk = labelled_study.pk
    assert [s["id"] for s in api.get("/api/annotation/studies/").json()["results"]] == [pk]
    detail = api.get(f"/api/annotation/studies/{pk}/").json()
    assert {m["username"] for m in detail["members"]} == {""}
    assert len(api.get(f"/api/annotation/studies/{pk}/items/").json()) == 4
    assert api.get(f"/api/annotation/studies/{pk}/results/").json()["items_complete"] == 4
    assert api.get(f"/api/annotation/studies/{pk}/export/").status_code == 200


def test_a_viewer_changes_nothing_and_gets_no_identities(labelled_study, viewer, annotators, client: Client):
    api = APIClient()
    api.force_authenticate(viewer)
    client.force_login(viewer)
    pk = labelled_study.pk
    before = _state()
    refused = [
        api.post("/api/annotation/studies/", {"name": "mine", "seed": 1, "top_k": 5}, format="json"),
        api.post(f"/api/annotation/studies/{pk}/close/"),
        api.post(f"/api/annotation/studies/{pk}/reopen/"),
        api.get(f"/api/annotation/studies/{pk}/export/", {"identities": "1"}),
        client.get("/annotation/studies/new/"),
        client.post("/annotation/studies/new/", {"name": "mine"}),
        client.post(f"/annotation/studies/{pk}/close/"),
        client.post(f"/annotation/studies/{pk}/members/", {"annotators": [annotators[2].pk]}),
        client.post(f"/annotation/studies/{pk}/guidelines/", {"guidelines": "x", "gold_rate": "0.5"}),
        client.post(
            f"/annotation/studies/{pk}/items/1/",
            {"action": "adjudicate", "adj-c1": "yes", "adj-c2": "yes", "adj-c3": "yes", "adj-reason": "x"},
        ),
        client.post(
            f"/annotation/studies/{pk}/items/1/",
            {"action": "gold", "gold-c1": "yes", "gold-c2": "yes", "gold-c3": "yes"},
        ),
        client.get(f"/annotation/studies/{pk}/export/labels.csv", {"identities": "1"}),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert _state() == before


def test_the_study_page_lists_its_items_each_linked_to_its_candidate_and_votes(labelled_study, viewer, client: Client):
    client.force_login(viewer)
    pk = labelled_study.pk
    detail = client.get(f"/annotation/studies/{pk}/").content.decode()
    table = detail.split('data-testid="study-items"')[1].split("</table>")[0]
    items = list(labelled_study.items.select_related("candidate").order_by("number"))
    assert len(items) == 4 and table.count("<tr class=") == len(items)
    for item in items:
        row = table.split(f'data-item="{item.number}"')[1].split("</tr>")[0]
        assert f'href="/annotation/studies/{pk}/items/{item.number}/"' in row
        assert f'href="/candidates/c/{item.candidate.external_id}/"' in row
        assert "1 / 1" in row  # one label given of the one each item needs
