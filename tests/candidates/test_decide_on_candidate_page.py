"""Curators approve or reject from a candidate's own page, through the same service as the queue;
viewers see no form and are refused the POST."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from candidates.models import Decision
from tests.candidates.curation_support import decide
from tests.candidates.test_flag_warnings import FLAGGED, WARNING, checked  # noqa: F401
from tests.conftest import make_user
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db

FIRST = "bb-187101/gpt-5.4-mini/claude-opus-4-7"
URL = f"/candidates/c/{FIRST}/"


@pytest.fixture
def viewer_client(db) -> APIClient:
    client = APIClient()
    client.force_login(make_user("view", VIEWER))
    return client


def form(**fields: object) -> dict[str, object]:
    return {"candidate": FIRST, "revision": 1, "verdict": "reject", "reason": "harm_requested", "note": ""} | fields


def test_a_curator_decides_on_the_candidate_page_and_sees_the_decision(examples_imported, curator, curator_client):
    page = curator_client.get(URL).content.decode()
    assert 'data-testid="decide"' in page and 'data-testid="current-verdict">Undecided' in page
    response = curator_client.post(URL, form(note="gives the harm away"))
    assert response.status_code == 302 and response.url == URL
    decision = Decision.objects.get()
    assert (decision.verdict, decision.reason, decision.note, decision.decided_by) == (
        "reject",
        "harm_requested",
        "gives the harm away",
        curator,
    )
    after = curator_client.get(URL).content.decode()
    assert 'data-testid="current-verdict">Rejected' in after and "gives the harm away" in after
    assert f"Rejected {FIRST}." in after and "Decision history (1)" in after

    curator_client.post(URL, form(verdict="approve", reason="valid"))
    again = curator_client.get(URL).content.decode()
    assert 'data-testid="current-verdict">Approved' in again and "Decision history (2)" in again


@pytest.mark.parametrize(
    "fields, field, status",
    [
        ({"reason": "valid"}, "reason", 400),  # valid is no reason to reject
        ({"verdict": "approve", "reason": "unrealistic"}, "reason", 400),
        ({"reason": "other", "note": " "}, "note", 400),
        ({"verdict": ""}, "verdict", 400),
        ({"revision": 7}, "decide-errors", 400),  # edited since: the candidate moved on
    ],
)
def test_a_refused_decision_is_shown_next_to_its_field_and_records_nothing(
    examples_imported, curator_client, fields, field, status
):
    response = curator_client.post(URL, form(**fields))
    assert response.status_code == status
    html = response.content.decode()
    testid = field if field == "decide-errors" else f"{field}-error"
    assert f'data-testid="{testid}"' in html
    assert not Decision.objects.exists()


def test_approving_a_flagged_candidate_here_needs_the_acknowledgement(checked, curator_client):  # noqa: F811
    url = f"/candidates/c/{FLAGGED}/"
    page = curator_client.get(url).content.decode()
    assert 'data-testid="decide-acknowledge"' in page
    fields = {"candidate": FLAGGED, "revision": 1, "verdict": "approve", "reason": "valid", "warning_seen": WARNING}
    refused = curator_client.post(url, fields)
    assert refused.status_code == 400 and 'data-testid="acknowledge-error"' in refused.content.decode()
    assert not Decision.objects.exists()
    assert curator_client.post(url, fields | {"acknowledge_flags": "on"}).status_code == 302
    assert Decision.objects.get().flag_warning == WARNING


def test_viewers_and_annotators_see_no_form_and_are_refused(
    examples_imported, curator, viewer_client, annotator_client
):
    decide(FIRST, curator)
    page = viewer_client.get(URL)
    assert page.status_code == 200 and 'data-testid="decide"' not in page.content.decode()
    assert 'data-testid="current-verdict">Approved' in page.content.decode()  # the decision shows to readers
    assert viewer_client.post(URL, form()).status_code == 403
    assert annotator_client.post(URL, form()).status_code == 403
    assert Decision.objects.count() == 1


def test_the_review_page_keeps_its_own_form_only(examples_imported, curator_client):
    html = curator_client.get("/candidates/review/1/").content.decode()
    assert 'id="decision-form"' in html and 'data-testid="decide"' not in html
