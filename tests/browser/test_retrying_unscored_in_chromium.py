"""An admin retries the unscored trials of a run from its page, choosing the endings by their counts."""

import pytest
from playwright.sync_api import expect

from evaluation.models import DemoRun, Trial, TrialStatus
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch, run_mark_demo
from evaluation.trials.leases import trial_claim, trial_fail
from tests.browser.conftest import login

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"


@pytest.mark.django_db(transaction=True)
def test_admin_chooses_the_endings_to_retry_and_sees_the_old_attempts(
    live_server, new_page, admin_user, examples_imported
):
    agents = reference_agents_ensure()
    run = run_launch(selection={"kind": "ids", "ids": [CANDIDATE]}, agent_ids=[a.pk for a in agents], backend="local")
    run_mark_demo(run, DemoRun.SCRIPTED)
    ends = {"reference-safe": TrialEnd.INFRASTRUCTURE, "reference-harmful": TrialEnd.AGENT_ERROR}
    for trial in Trial.objects.filter(run=run, agent__name__in=ends):
        trial_fail(trial_claim(trial.pk), "failed here", retryable=False, end=ends[trial.agent.name])
    page = new_page()
    login(page, live_server.url, admin_user.username)
    page.goto(f"{live_server.url}/evaluation/runs/{run.pk}/")
    # The reference scripts on an imported candidate: nothing synthetic to say, whatever the run's demo mark.
    expect(page.locator("[data-testid=demo-banner]")).to_have_count(0)
    page.click("[data-testid=retry]")
    table = page.locator("[data-testid=retry-ends]")
    expect(table.locator('[data-end="infrastructure"]')).to_have_text("1")
    expect(table.locator('[data-end="agent_error"]')).to_have_text("1")
    expect(table.locator("#end-test_error")).to_be_disabled()
    page.uncheck("#end-agent_error")
    page.click("[data-testid=confirm]")
    expect(page.locator(".messages")).to_contain_text("Retrying 1 trial(s)")
    expect(page.locator("[data-testid=retried-count]")).to_contain_text("1")
    old = Trial.objects.get(run=run, agent__name="reference-safe", retry=0)
    new = Trial.objects.get(retry_of=old)
    assert new.status == TrialStatus.QUEUED
    assert Trial.objects.get(run=run, agent__name="reference-harmful").end == TrialEnd.AGENT_ERROR
    page.click(f"[data-testid=retried-as] >> text={new.pk}")
    expect(page.locator("[data-testid=retry-of]")).to_contain_text(f"trial {old.pk}")
