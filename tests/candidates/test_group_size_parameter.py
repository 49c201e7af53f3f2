"""K (`?k=`) follows one rule on every page and API that takes it: a whole number from 1, empty or
absent for the setting; anything else is refused, naming k, never ignored."""

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db

PAGES = ["/candidates/", "/candidates/review/", "/candidates/review/1/", "/candidates/reports/search/"]
APIS = ["/api/candidates/", "/api/review/queue/"]


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5", "٣", "99999999999999"])
def test_pages_and_apis_refuse_a_k_that_is_not_a_group_size(examples_imported, curator_client, value):
    for url in PAGES:
        page = curator_client.get(url, {"k": value})
        assert page.status_code == 400, url
        text = page.content.decode()
        assert "<b>k</b>: must be a whole number from 1 to 2147483647" in text, url
        assert 'class="row-' not in text and "bb-319395" not in text  # nothing of the page itself
    for url in APIS:
        refused = curator_client.get(url, {"k": value})
        assert refused.status_code == 400, url
        [error] = refused.json()["errors"]
        assert error["field"] == "k" and error["message"].startswith("must be a whole number from 1 to 2147483647")


def test_the_same_k_shows_the_same_groups_on_the_page_and_the_api(examples_imported, curator_client):
    page = curator_client.get("/candidates/", {"k": "1"}).content.decode()
    assert page.count('class="row-top"') == 1
    rows = curator_client.get("/api/candidates/", {"k": "1"}).json()["results"]
    assert [r["group"] for r in rows].count("top") == 1
    queue = curator_client.get("/api/review/queue/", {"k": " 1 "}).json()
    assert queue["k"] == 1 and queue["total"] == 1
    assert curator_client.get("/api/review/queue/", {"k": ""}).json()["k"] == settings.VERIHARM_TOP_K


def test_a_bad_group_is_refused_on_the_page_and_the_api(examples_imported, curator_client):
    assert "must be one of top, bottom, unranked" in curator_client.get("/candidates/?group=middle").content.decode()
    refused = curator_client.get("/api/candidates/?group=middle")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "group"


def test_a_user_without_the_role_learns_nothing_from_a_bad_k(examples_imported, annotator_client):
    assert annotator_client.get("/candidates/?k=abc").status_code == 403
    assert annotator_client.get("/api/candidates/?k=abc").status_code == 403
    # The review page puts the query check before the role check in its bases: the role still comes first.
    for url in ("/candidates/review/?k=abc", "/candidates/review/1/?k=abc"):
        assert annotator_client.get(url).status_code == 403, url
        assert annotator_client.post(url, {"verdict": "approve"}).status_code == 403, url


def test_a_decision_posted_with_a_bad_k_changes_nothing(examples_imported, curator_client):
    from candidates.models import Decision

    response = curator_client.post("/candidates/review/1/?k=abc", {"verdict": "approve"})
    assert response.status_code == 400 and Decision.objects.count() == 0
