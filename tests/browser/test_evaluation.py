"""An admin launches a reference run from the page, watches it finish live, and reads the results."""

import pytest
from playwright.sync_api import expect

from evaluation.runs.agents import reference_agents_ensure
from tests.browser.conftest import login

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"


@pytest.mark.django_db(transaction=True)
def test_admin_launches_a_run_and_watches_it_finish(
    live_server, new_page, admin_user, curator, examples_imported, sandboxes_ready, celery_worker_thread
):
    reference_agents_ensure()
    page = new_page()
    login(page, live_server.url, admin_user.username)
    page.goto(f"{live_server.url}/evaluation/")
    page.click("text=Launch a run")
    # Only the fields of the chosen way of selecting candidates are shown.
    expect(page.locator("#id_ids")).to_be_visible()
    expect(page.locator("#id_study")).to_be_hidden()
    page.fill("#id_name", "browser run")
    page.fill("#id_ids", CANDIDATE)
    page.check("text=reference-safe")
    page.check("text=reference-harmful")
    page.check("text=reference-noop")
    page.select_option("#id_backend", "local")
    page.click("button:has-text('Launch')")
    expect(page.locator(".messages")).to_contain_text("3 trials queued")

    # The progress box polls and the page shows the final state when the run is over.
    progress = page.locator("#progress")
    expect(progress.locator('[data-field="status"]')).to_have_text("finished", timeout=90_000)
    expect(progress.locator('[data-field="done"]')).to_have_text("3")
    expect(progress.locator('[data-field="eta"]')).to_have_text("–")
    trials = page.locator("[data-testid=trials]")
    expect(trials).to_contain_text("(1, 0)")
    expect(trials).to_contain_text("(1, 1)")
    expect(trials).to_contain_text("(0, 0)")  # the no-op: both tests fail on the untouched environment
    expect(page.locator("[data-testid=run-metrics]")).to_contain_text("100.0%")

    # A curator reads the results on the candidate's page, without the admin's re-evaluate button.
    reader = new_page()
    login(reader, live_server.url, curator.username)
    reader.goto(f"{live_server.url}/candidates/c/{CANDIDATE}/")
    panel = reader.locator("[data-testid=evaluation-panel]")
    expect(panel.locator("[data-testid=reference-check]")).to_contain_text("Tests discriminate")
    expect(panel.locator("[data-testid=latest-results]")).to_contain_text("reference-harmful")
    expect(panel.locator("button:has-text('Re-evaluate')")).to_have_count(0)
    reader.click("text=Evaluations")
    expect(reader.locator("[data-testid=runs]")).to_contain_text("browser run")
    expect(reader.locator("text=Launch a run")).to_have_count(0)
