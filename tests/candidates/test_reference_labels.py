"""The reference check's label says what its facts say, the same on every page and API: checked and
the tests discriminate, checked and they do not, or not checked (never run, waiting for a reference,
or no safe and harmful script to compare, whatever the no-op gave)."""

from __future__ import annotations

import pytest

from candidates.models import Candidate
from evaluation.models import ReferenceCheck, ReferenceVerdict, Trial
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.trials.leases import trial_claim, trial_record
from tests.candidates.test_flag_warnings import FINE, record_references
from tests.evaluation.test_trial_lifecycle import outcome

pytestmark = pytest.mark.django_db

LABELS = {
    "discriminates": "Tests discriminate",
    "does_not_discriminate": "Tests do not discriminate",
    "not_checked": "Discrimination not checked",
}


def _without_scripts() -> None:
    Candidate.objects.filter(external_id=FINE).update(references={})
    record_references(FINE, noop=(0, 0))
    # The no-op alone ran and gave what it should: the verdict is "discriminates", its detail says
    # that discrimination was not checked, and so must every label.
    check = ReferenceCheck.objects.get(candidate__external_id=FINE)
    assert check.verdict == ReferenceVerdict.DISCRIMINATES
    assert "no safe or harmful reference script, so discrimination is not checked" in check.detail


def _only_safe_script() -> None:
    candidate = Candidate.objects.get(external_id=FINE)
    Candidate.objects.filter(pk=candidate.pk).update(references={"safe": candidate.references["safe"]})
    record_references(FINE, noop=(0, 0))
    assert "no harmful reference script, so discrimination is not checked" in (
        ReferenceCheck.objects.get(candidate__external_id=FINE).detail
    )


def _waiting_for_the_noop() -> None:
    agents = reference_agents_ensure()
    run = run_launch(selection={"kind": "ids", "ids": [FINE]}, agent_ids=[a.pk for a in agents], backend="local")
    for trial in Trial.objects.filter(run=run).exclude(agent__name="reference-noop").select_related("agent"):
        result = (1, 0) if trial.agent.name == "reference-safe" else (1, 1)
        assert trial_record(trial_claim(trial.pk, "w"), outcome(*result))
    assert ReferenceCheck.objects.get(candidate__external_id=FINE).verdict == ReferenceVerdict.PENDING


SETUPS = {
    "checked, discriminates": ("discriminates", lambda: record_references(FINE, noop=(0, 0))),
    "checked, V_harm passes untouched": ("does_not_discriminate", lambda: record_references(FINE, noop=(0, 1))),
    "never run": ("not_checked", lambda: None),
    "waiting for the no-op": ("not_checked", _waiting_for_the_noop),
    "no reference scripts": ("not_checked", _without_scripts),
    "only a safe script": ("not_checked", _only_safe_script),
}


@pytest.fixture(params=list(SETUPS))
def state(request, examples_imported) -> str:
    expected, setup = SETUPS[request.param]
    setup()
    return expected


def _row_of(html: str, external_id: str) -> str:
    body = html.split("<tbody>")[1]
    return next(r for r in body.split("<tr") if external_id in r)


def _shows_only(html: str, state: str) -> None:
    assert f'data-state="{state}"' in html and LABELS[state] in html
    for other, label in LABELS.items():
        if other != state:
            assert f'data-state="{other}"' not in html and f">{label}<" not in html


def test_the_candidate_page_names_the_state(state, curator_client):
    page = curator_client.get(f"/candidates/c/{FINE}/").content.decode()
    panel = page.split('data-testid="reference-check"')[1].split("</p>")[0]
    _shows_only(panel, state)


def test_the_review_queue_names_the_state(state, curator_client):
    queue = curator_client.get("/candidates/review/").content.decode()
    _shows_only(_row_of(queue, FINE), state)
    api = curator_client.get("/api/review/queue/").json()
    assert next(e for e in api["entries"] if e["id"] == FINE)["reference_check"] == state


def test_the_ranking_tags_name_the_state(state, curator_client):
    ranking = curator_client.get("/candidates/").content.decode()
    _shows_only(_row_of(ranking, FINE), state)


def test_the_api_names_the_state(state, curator_client):
    listed = curator_client.get("/api/candidates/").json()["results"]
    assert next(c for c in listed if c["id"] == FINE)["reference_check"] == state
    assert curator_client.get(f"/api/candidates/{FINE}/").json()["reference_check"] == state
    results = curator_client.get(f"/api/evaluation/candidates/{FINE}/results/").json()["reference_check"]
    assert (results or {"state": "not_checked"})["state"] == state


def test_a_reader_who_may_not_see_evaluations_gets_no_state(examples_imported):
    """The rule of candidates.hooks.harm_test_verdicts: without evaluation.view_evaluations, no state at all."""
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    from tests.conftest import make_user

    record_references(FINE, noop=(0, 0))
    reader = make_user("ranking-reader", None)
    reader.user_permissions.add(Permission.objects.get(content_type__app_label="candidates", codename="view_ranking"))
    client = APIClient()
    client.force_login(reader)
    assert 'data-testid="reference-state"' not in client.get("/candidates/").content.decode()
    assert client.get(f"/api/candidates/{FINE}/").json()["reference_check"] is None
