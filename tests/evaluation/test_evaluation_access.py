"""Roles on every evaluation page and endpoint; pages and exports show recorded results."""

from __future__ import annotations

import csv
import io
import json

import pytest

from evaluation.models import Run, Trial
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.trials.leases import trial_claim, trial_record
from tests.evaluation.test_trial_lifecycle import SAFE_ID, outcome

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(examples_imported, admin_user):
    agents = reference_agents_ensure()
    run = run_launch(
        selection={"kind": "top_k", "k": 5},
        agent_ids=[a.pk for a in agents],
        backend="local",
        created_by=admin_user,
        name="reference check",
    )
    results = {"reference-safe": (1, 0), "reference-harmful": (1, 1), "reference-noop": (0, 0)}
    for trial in Trial.objects.filter(run=run).select_related("agent"):
        trial_record(trial_claim(trial.pk, "w"), outcome(*results[trial.agent.name]))
    return run


def read_urls(run: Run) -> list[str]:
    trial = run.trials.first()
    return [
        "/evaluation/",
        f"/evaluation/runs/{run.pk}/",
        f"/evaluation/runs/{run.pk}/progress.json",
        f"/evaluation/runs/{run.pk}/metrics/",
        f"/evaluation/runs/{run.pk}/metrics/?format=csv",
        f"/evaluation/runs/{run.pk}/metrics/?format=json",
        f"/evaluation/trials/{trial.pk}/",
        "/api/evaluation/runs/",
        f"/api/evaluation/runs/{run.pk}/",
        f"/api/evaluation/runs/{run.pk}/progress/",
        f"/api/evaluation/runs/{run.pk}/metrics/",
        f"/api/evaluation/runs/{run.pk}/trials/",
        f"/api/evaluation/trials/{trial.pk}/",
        "/api/evaluation/agents/",
        f"/api/evaluation/candidates/{SAFE_ID}/results/",
    ]


def write_requests(run: Run) -> list[tuple[str, dict]]:
    return [
        (
            "/evaluation/launch/",
            {"selection_kind": "top_k", "k": "5", "agents": ["1"], "repetitions": "1", "backend": "local"},
        ),
        (f"/evaluation/runs/{run.pk}/cancel/", {}),
        (f"/evaluation/runs/{run.pk}/rerun/", {}),
        (f"/evaluation/candidates/{SAFE_ID}/rerun/", {}),
        ("/api/evaluation/runs/", {"selection": {"kind": "top_k", "k": 5}, "agents": ["reference-safe"]}),
        (f"/api/evaluation/runs/{run.pk}/cancel/", {}),
        (f"/api/evaluation/runs/{run.pk}/rerun/", {}),
        (f"/api/evaluation/candidates/{SAFE_ID}/rerun/", {}),
    ]


def test_curators_and_admins_see_results(finished_run, curator_client, admin_client_):
    for url in read_urls(finished_run):
        assert curator_client.get(url).status_code == 200, url
        assert admin_client_.get(url).status_code == 200, url


def test_annotators_see_nothing(finished_run, annotator_client):
    for url in read_urls(finished_run) + ["/evaluation/launch/"]:
        response = annotator_client.get(url)
        assert response.status_code == 403, url
        assert b"reference-safe" not in response.content


def test_anonymous_users_are_sent_to_log_in(finished_run, client):
    for url in read_urls(finished_run):
        response = client.get(url)
        assert response.status_code in (302, 401, 403), url
        if response.status_code == 302:
            assert response.url.startswith("/login/")


def test_annotators_and_curators_cannot_launch_cancel_or_rerun(finished_run, annotator_client, curator_client):
    before = (Run.objects.count(), Trial.objects.count())
    for client in (annotator_client, curator_client):
        for url, data in write_requests(finished_run):
            response = client.post(url, data, format="json" if url.startswith("/api/") else None)
            assert response.status_code == 403, (url, response.status_code)
        assert client.get("/evaluation/launch/").status_code == 403
    assert (Run.objects.count(), Trial.objects.count()) == before
    assert Run.objects.get(pk=finished_run.pk).cancelled_at is None


def test_admins_launch_from_the_page_and_the_api(examples_imported, admin_client_, django_capture_on_commit_callbacks):
    agents = reference_agents_ensure()
    assert b"Launch an evaluation run" in admin_client_.get("/evaluation/launch/").content
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        response = admin_client_.post(
            "/evaluation/launch/",
            {
                "name": "from the page",
                "selection_kind": "ids",
                "ids": f"{SAFE_ID}\n",
                "agents": [a.pk for a in agents],
                "repetitions": "2",
                "backend": "docker",
            },
        )
    assert response.status_code == 302, response.content.decode()[-2000:]
    run = Run.objects.get(name="from the page")
    assert run.backend == "docker" and run.trials.count() == 6 and len(enqueued) == 1
    response = admin_client_.post(
        "/api/evaluation/runs/",
        {
            "selection": {"kind": "top_k", "k": 1},
            "agents": ["reference-safe", str(agents[1].pk)],
            "name": "api",
        },
        format="json",
    )
    assert response.status_code == 201 and response.json()["agents"] == ["reference-harmful", "reference-safe"]
    assert Run.objects.get(name="api").backend == "local"  # the settings' default


def test_bad_launches_say_what_is_wrong(examples_imported, admin_client_):
    agent = reference_agents_ensure()[0]
    response = admin_client_.post(
        "/api/evaluation/runs/",
        {"selection": {"kind": "ids", "ids": ["missing"]}, "agents": ["reference-safe"]},
        format="json",
    )
    assert response.status_code == 400 and response.json() == {
        "errors": [{"field": "", "message": "no candidate with id missing"}]
    }
    response = admin_client_.post(
        "/api/evaluation/runs/", {"selection": {"kind": "top_k", "k": 3}, "agents": ["ghost"]}, format="json"
    )
    assert response.status_code == 400 and response.json()["errors"] == [
        {"field": "agents", "message": "no agent ghost"}
    ]
    page = admin_client_.post(
        "/evaluation/launch/",
        {"selection_kind": "ids", "ids": "missing", "agents": [agent.pk], "repetitions": "1", "backend": "local"},
    )
    assert page.status_code == 400 and b"no candidate with id missing" in page.content
    assert not Run.objects.exists()


def test_metrics_pages_and_exports(finished_run, curator_client):
    page = curator_client.get(f"/evaluation/runs/{finished_run.pk}/metrics/").content.decode()
    assert "share of instances with V_task = 1 and V_harm = 1" in page and "clustered by candidate" in page
    assert "0 trials without a verdict" in page
    rows = list(
        csv.DictReader(
            io.StringIO(curator_client.get(f"/evaluation/runs/{finished_run.pk}/metrics/?format=csv").content.decode())
        )
    )
    overall = {r["agent"]: r for r in rows if r["breakdown"] == "all"}
    assert float(overall["reference-harmful"]["hsr"]) == 1.0 and float(overall["reference-safe"]["ssr"]) == 1.0
    assert float(overall["reference-safe"]["ta"]) == 1.0 and overall["reference-safe"]["n_candidates"] == "2"
    assert {r["group"] for r in rows if r["breakdown"] == "perturbation"} == {
        "underspecification",
        "delegation_of_control",
    }
    document = json.loads(curator_client.get(f"/api/evaluation/runs/{finished_run.pk}/metrics/").content)
    assert document["definitions"]["nhsr"].startswith("share of V_harm = 1 among")
    assert {r["agent"] for r in document["rows"]} == {"reference-safe", "reference-harmful", "reference-noop"}


def test_candidate_page_shows_latest_results_reference_check_and_rerun_for_admins(
    finished_run, curator_client, admin_client_
):
    url = f"/candidates/c/{SAFE_ID}/"
    page = curator_client.get(url).content.decode()
    assert 'data-testid="evaluation-panel"' in page and "Tests discriminate" in page
    assert "(1, 0)" in page and "(1, 1)" in page and "Re-evaluate" not in page
    assert "Re-evaluate" in admin_client_.get(url).content.decode()
    results = curator_client.get(f"/api/evaluation/candidates/{SAFE_ID}/results/").json()
    assert results["reference_check"]["verdict"] == "discriminates"
    assert sorted((r["agent"], r["r_task"], r["r_harm"], r["stale"]) for r in results["latest"]) == [
        ("reference-harmful", 1, 1, False),
        ("reference-noop", 0, 0, False),
        ("reference-safe", 1, 0, False),
    ]
    # Re-evaluation from the page makes a new run; the page then shows both in its history.
    response = admin_client_.post(f"/evaluation/candidates/{SAFE_ID}/rerun/")
    assert response.status_code == 302 and Run.objects.count() == 2
    assert "History: 6 trials" in admin_client_.get(url).content.decode()


def test_run_page_shows_progress_and_trials(finished_run, curator_client):
    page = curator_client.get(f"/evaluation/runs/{finished_run.pk}/").content.decode()
    assert '<span data-testid="run-selection">the top 5 of the ranking</span>' in page and "{&#x27;kind" not in page
    assert 'id="progress-data"' in page and '"status": "finished"' in page and "(1, 1)" in page
    progress = curator_client.get(f"/api/evaluation/runs/{finished_run.pk}/progress/").json()
    assert progress["done"] == 6 and progress["total"] == 6 and progress["status"] == "finished"
    trials = curator_client.get(f"/api/evaluation/runs/{finished_run.pk}/trials/?status=done").json()
    assert trials["count"] == 6
