"""An admin launches a small generation run from its page with the scripted demo proposer and judges;
a real worker runs it in real sandboxes; the run page follows it to its Table 1 and the search page
shows the iteration's diff and transcript. A curator reads without a launch form; an annotator is
refused."""

import pytest
from playwright.sync_api import expect

from demo.runs import demo_agents_ensure
from tests.browser.conftest import login

TASK = "bashbench-489407"


@pytest.mark.django_db(transaction=True)
def test_admin_launches_a_generation_run_and_reads_its_table_1_and_search(
    live_server, new_page, admin_user, curator, annotator, sandboxes_ready, celery_worker_thread
):
    demo_agents_ensure()
    page = new_page()
    login(page, live_server.url, admin_user.username)
    page.goto(f"{live_server.url}/evaluation/")
    page.click("nav >> text=Generation")
    page.click("text=Launch a generation run")
    # Only the fields of the chosen way of selecting source tasks are shown.
    expect(page.locator("#id_ids")).to_be_visible()
    expect(page.locator("#id_filter_text")).to_be_hidden()
    page.fill("#id_name", "browser generation")
    page.fill("#id_ids", TASK)
    page.check("text=demo-reckless")
    # The scripted demo proposer and both scripted judges are offered, checked.
    expect(page.locator("#id_scripted_proposer")).to_be_checked()
    expect(page.locator("[data-testid=judges]")).to_contain_text("scripted demo judge (strict)")
    page.fill("#id_budget", "2")
    page.select_option("#id_backend", "local")
    page.click("button:has-text('Launch')")
    expect(page.locator(".messages")).to_contain_text("1 search(es) queued")

    # The progress box follows the run, and the page shows Table 1 once its search has ended.
    progress = page.locator("[data-testid=progress]")
    expect(progress.locator('[data-field="total"]')).to_have_text("1")
    # Just launched, the search is queued or running (it takes seconds in the sandbox); nothing reloads the
    # page below but its own polling.
    expect(progress.locator('[data-field="status_label"]')).to_have_text("Running")
    expect(page.locator("[data-testid=no-report]")).to_be_visible()
    expect(progress.locator('[data-field="status_label"]')).to_have_text("Finished", timeout=180_000)
    expect(progress.locator('[data-field="done"]')).to_have_text("1")
    expect(progress.locator("[data-testid=kept-count]")).to_have_text("1")
    report = page.locator("[data-testid=search-report]")
    expect(report).to_contain_text("scripted demo proposer")
    expect(report).to_contain_text("demo-reckless")
    expect(report).to_contain_text("100.0%")
    expect(page.locator("[data-testid=searches]")).to_contain_text("Harmful success kept (iteration 1)")
    page.screenshot(path="/tmp/generation-run.png", full_page=True)

    # The search: iteration 1's proposal as a word diff against t_seed, the rollout's transcript.
    page.click("[data-testid=searches] >> text=#")
    iteration = page.locator("[data-testid=iteration][data-iteration='1']")
    expect(iteration.locator("[data-testid=seed-diff] ins.diff-ins")).not_to_have_count(0)
    expect(iteration.locator("[data-testid=rollout] [data-testid=step]")).not_to_have_count(0)
    expect(iteration.locator("[data-testid=rollout] [data-field=r_harm]")).to_have_text("1")
    expect(iteration.locator("[data-testid=kept-tag]")).to_be_visible()
    expect(page.locator("[data-testid=judgement]")).to_have_count(2)
    expect(page.locator("[data-testid=proposer-calls]")).to_contain_text("scripted demo proposer is scripted")
    page.screenshot(path="/tmp/generation-search.png", full_page=True)
    search_url = page.url
    page.click("text=Run: browser generation")
    run_url = page.url

    # A curator reads the run, with neither a launch form nor a cancel button.
    reader = new_page()
    login(reader, live_server.url, curator.username)
    reader.goto(f"{live_server.url}/evaluation/generation/")
    expect(reader.locator("[data-testid=generation-runs]")).to_contain_text("browser generation")
    expect(reader.locator("text=Launch a generation run")).to_have_count(0)
    assert reader.goto(f"{live_server.url}/evaluation/generation/launch/").status == 403
    assert reader.goto(run_url).status == 200
    expect(reader.locator("[data-testid=search-report]")).to_contain_text("100.0%")

    # An annotator never sees judges or scores: every generation page is refused.
    blind = new_page()
    login(blind, live_server.url, annotator.username)
    expect(blind.locator("nav >> text=Generation")).to_have_count(0)
    for url in (f"{live_server.url}/evaluation/generation/", run_url, search_url):
        assert blind.goto(url).status == 403
