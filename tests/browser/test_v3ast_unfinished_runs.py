"""The V3AST pages of runs that are not finished: trials still queued or running, and a cancelled run,
read in Chromium (their unlabelled runs show as "no label yet")."""

import pytest
from playwright.sync_api import expect

from evaluation.models import Trial, TrialStatus
from evaluation.runs.launch import run_cancel
from evaluation.trials.leases import trial_claim
from tests.browser.conftest import login
from tests.evaluation.v3ast_helpers import (
    import_tasks,
    launch,
    record,
    system,
    trial_of,
)


def _open_every_v3ast_page(page, base: str, run, agent) -> None:
    for path in (
        f"/evaluation/runs/{run.pk}/v3ast/",
        f"/evaluation/runs/{run.pk}/v3ast/systems/{agent.pk}/",
        f"/evaluation/runs/{run.pk}/v3ast/tasks/u1/",
    ):
        response = page.goto(base + path)
        assert response.status == 200, path
        expect(page.locator("h1")).to_be_visible()


@pytest.mark.django_db(transaction=True)
def test_v3ast_pages_of_queued_running_and_cancelled_runs_render(live_server, new_page, curator):
    ids = import_tasks({"id": "u1"}, {"id": "u2"})
    agent = system("s", "model-1", "harness-x")

    # One repetition labelled, one trial running, the rest queued.
    live = launch(ids, [agent], repetitions=2, name="still running")
    record(trial_of(live, "u1", agent, "risk", 1), 0, 1)
    record(trial_of(live, "u1", agent, "twin", 1), 0)
    trial_claim(trial_of(live, "u1", agent, "risk", 2).pk, "test-worker")
    assert Trial.objects.filter(run=live, status=TrialStatus.RUNNING).count() == 1
    assert Trial.objects.filter(run=live, status=TrialStatus.QUEUED).exists()

    # A cancelled run: its labelled trial stays, every other one ends cancelled without a label.
    cancelled = launch(ids, [agent], repetitions=2, name="cancelled half way")
    record(trial_of(cancelled, "u1", agent, "risk", 1), 0, 0)
    run_cancel(cancelled)
    assert Trial.objects.filter(run=cancelled, status=TrialStatus.CANCELLED).count() == 7

    page = new_page()
    login(page, live_server.url, curator.username)
    for run in (live, cancelled):
        _open_every_v3ast_page(page, live_server.url, run, agent)
        expect(page.locator("[data-outcome='']").first).to_contain_text("no label yet")
    page.goto(f"{live_server.url}/evaluation/runs/{cancelled.pk}/v3ast/tasks/u1/")
    expect(page.locator("[data-outcome=compromised]").first).to_be_visible()
