"""Searching a run's trials by candidate id, a step's command or output, or a test's output: on the
run page (beside the status filter) and in the API (`q`), paged, refused with 400 when too long."""

from __future__ import annotations

import re

import pytest

from evaluation.models import TranscriptStep, Trial, TrialStatus
from evaluation.trials.leases import trial_claim
from tests.evaluation.v3ast_helpers import import_tasks, launch, record, system

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    ids = import_tasks(
        {"id": "search/alpha", "twin": None},
        {"id": "search/beta", "twin": None},
        {"id": "search/gamma", "twin": None},
        *({"id": f"bulk/{n:02d}", "twin": None} for n in range(60)),
    )
    agent = system("searcher", "model-1", "harness-x")
    run = launch(ids, [agent], protocol="veriharm", name="searchable")
    trials = {t.candidate.external_id: t for t in Trial.objects.filter(run=run).select_related("candidate")}
    alpha = trials["search/alpha"]
    claim = trial_claim(alpha.pk, "test-worker")
    for index in range(5):  # five steps hold the command: the trial is listed once
        TranscriptStep.objects.create(
            trial=alpha, attempt=claim.attempt, index=index, kind="command", command="tar czf Backup.tgz /srv/logs"
        )
    TranscriptStep.objects.create(
        trial=trials["search/beta"], attempt=1, index=0, kind="command", command="ls", content="checksum 9c1e77 ok"
    )
    # Gamma is recorded: its task test's output is searched too ("pytest exit 1").
    record(trials["search/gamma"], 1, 0)
    return run


def _page_ids(html: str) -> list[str]:
    return re.findall(r'<td class="mono"><a href="/candidates/c/([^/"]+/[^/"]+)/">', html)


def _api_ids(client, run, **params) -> list[str]:
    response = client.get(f"/api/evaluation/runs/{run.pk}/trials/", params)
    assert response.status_code == 200, response.content
    return [row["candidate"] for row in response.json()["results"]]


@pytest.mark.parametrize(
    ("q", "found"),
    [
        ("backup.TGZ", ["search/alpha"]),  # a command, whatever the case
        ("9c1e77", ["search/beta"]),  # a step's output
        ("pytest exit 1", ["search/gamma"]),  # the task test's output
        ("search/", ["search/alpha", "search/beta", "search/gamma"]),  # candidate ids
        ("  search/be  ", ["search/beta"]),  # spaces around are not part of it
        ("50%", []),  # a LIKE wildcard is a plain character
    ],
)
def test_the_run_page_and_the_api_find_the_same_trials(run, curator_client, q, found):
    response = curator_client.get(f"/evaluation/runs/{run.pk}/", {"q": q})
    html = response.content.decode()
    assert response.status_code == 200 and sorted(_page_ids(html)) == found
    assert f'name="q" value="{q.strip()}"' in html
    assert sorted(_api_ids(curator_client, run, q=q)) == found


def test_the_search_and_the_status_filter_narrow_together(run, curator_client):
    assert _api_ids(curator_client, run, q="search/", status="done") == ["search/gamma"]
    assert _api_ids(curator_client, run, q="search/", status="running") == ["search/alpha"]
    html = curator_client.get(f"/evaluation/runs/{run.pk}/", {"q": "search/", "status": "queued"}).content.decode()
    assert _page_ids(html) == ["search/beta"] and "1 trial hold" in html


def test_a_search_is_paged_and_its_pages_keep_it(run, curator_client):
    first = curator_client.get(f"/evaluation/runs/{run.pk}/", {"q": "bulk/"}).content.decode()
    assert len(_page_ids(first)) == 50 and "60 trials hold “bulk/”" in first
    assert 'href="?q=bulk%2F&page=2"' in first
    second = curator_client.get(f"/evaluation/runs/{run.pk}/", {"q": "bulk/", "page": "2"}).content.decode()
    assert len(_page_ids(second)) == 10 and set(_page_ids(first)).isdisjoint(_page_ids(second))
    api = curator_client.get(f"/api/evaluation/runs/{run.pk}/trials/", {"q": "bulk/"}).json()
    assert api["count"] == 60 and len(api["results"]) == 50 and "q=bulk" in api["next"]


def test_without_a_search_every_trial_is_listed(run, curator_client):
    assert curator_client.get(f"/api/evaluation/runs/{run.pk}/trials/").json()["count"] == 63
    assert curator_client.get(f"/api/evaluation/runs/{run.pk}/trials/", {"q": ""}).json()["count"] == 63


def test_a_search_too_long_is_refused_with_400_naming_q(run, curator_client):
    long = "x" * 201
    page = curator_client.get(f"/evaluation/runs/{run.pk}/", {"q": long})
    assert page.status_code == 400 and "q" in page.content.decode() and "200" in page.content.decode()
    assert 'data-testid="trials"' not in page.content.decode()
    api = curator_client.get(f"/api/evaluation/runs/{run.pk}/trials/", {"q": long})
    assert api.status_code == 400
    assert [e["field"] for e in api.json()["errors"]] == ["q"]
    assert Trial.objects.filter(run=run, status=TrialStatus.DONE).count() == 1  # nothing changed
