"""A curator logs in, uploads pipeline output, opens the ranking and a candidate, and sees the diff."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login
from tests.conftest import EXAMPLES


@pytest.mark.django_db(transaction=True)
def test_curator_uploads_ranks_and_reads_a_candidate(
    live_server, new_page, curator, celery_worker_thread, tmp_path, settings
):
    from tests.factories import CandidateFactory

    settings.VERIHARM_IMPORT_DIR = tmp_path / "imports"
    CandidateFactory(id="imported-earlier")  # of an earlier import: not this batch
    page = new_page()
    login(page, live_server.url, curator.username)
    page.click("text=Import")
    page.set_input_files("#id_files", [str(EXAMPLES / "candidates.jsonl"), str(EXAMPLES / "search.jsonl")])
    page.click("button:has-text('Import')")
    expect(page.locator("[data-testid=import-summary]")).to_contain_text("2 created, 0 unchanged, 0 replaced")
    expect(page.locator("#import-bar")).to_have_attribute("value", "100")
    # The job's page opens the candidates this import brought, not the whole pool.
    page.click("text=Open the 2 candidates of this import")
    expect(page.locator("[data-testid=import-batch]")).to_contain_text("candidates.jsonl")

    rows = page.locator("table.ranking tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("table.ranking")).not_to_contain_text("imported-earlier")
    expect(rows.nth(0)).to_contain_text("bb-187101/gpt-5.4-mini/claude-opus-4-7")
    expect(rows.nth(0)).to_contain_text("23.50")
    expect(rows.nth(1)).to_contain_text("22.50")

    page.click("text=bb-319395/kimi-k2.5/gpt-5.5")
    diff = page.locator("[data-testid=diff]")
    expect(diff.locator("del.diff-del")).to_contain_text("Ensure the script has executable permissions")
    expect(diff.locator("ins.diff-ins")).to_contain_text("Several people on this shared machine")
    expect(page.locator(".code").first).to_contain_text("test_solution_script_is_world_writable")
    expect(page.locator("table.grid")).to_contain_text("claude-opus-4-7")


@pytest.mark.django_db(transaction=True)
def test_a_background_import_shows_its_progress_then_names_the_bad_line(
    live_server, new_page, curator, tmp_path, settings
):
    """The job page follows the import as a worker takes it: waiting at 0%, then the refusal at 100%
    with the bad line named, and nothing imported."""
    from celery.contrib.testing.worker import start_worker

    from candidates.models import Candidate
    from tests.factories import CandidateLineFactory, jsonl
    from veriharm_site.celery import app

    settings.VERIHARM_IMPORT_DIR = tmp_path / "imports"
    app.control.purge()
    good = [CandidateLineFactory() for _ in range(30)]
    bad = tmp_path / "broken.jsonl"
    bad.write_text(jsonl(*good) + '{"kind": "candidate"}\n')
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/import/")
    page.set_input_files("#id_files", str(bad))
    page.click("button:has-text('Import')")
    # No worker yet: the job waits, and its page says so with an empty bar.
    expect(page.locator("#import-progress")).to_contain_text("Waiting for a worker")
    expect(page.locator("#import-bar")).to_have_attribute("value", "0")
    expect(page.locator("#import-progress")).to_contain_text("of 31 lines checked")
    with start_worker(
        app, pool="solo", concurrency=1, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30
    ):
        # The page polls and shows the end by itself, without a reload by the test.
        # Every problem of the bad line, each named: its seven missing fields.
        expect(page.locator(".error-box")).to_contain_text("Nothing was imported: 7 problems", timeout=60_000)
    expect(page.locator(".error-box")).to_contain_text("broken.jsonl, line 31, field id: is required")
    expect(page.locator(".error-box")).to_contain_text("broken.jsonl, line 31, field judgements: is required")
    expect(page.locator("#import-bar")).to_have_attribute("value", "100")
    assert Candidate.objects.count() == 0
