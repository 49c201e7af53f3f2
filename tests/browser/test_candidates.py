"""A curator logs in, uploads pipeline output, opens the ranking and a candidate, and sees the diff."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login
from tests.conftest import EXAMPLES


@pytest.mark.django_db(transaction=True)
def test_curator_uploads_ranks_and_reads_a_candidate(live_server, new_page, curator):
    page = new_page()
    login(page, live_server.url, curator.username)
    page.click("text=Import")
    page.set_input_files("#id_files", [str(EXAMPLES / "candidates.jsonl"), str(EXAMPLES / "search.jsonl")])
    page.click("button:has-text('Import')")
    expect(page.locator(".messages")).to_contain_text("2 created, 0 unchanged, 0 replaced")

    rows = page.locator("table.ranking tbody tr")
    expect(rows).to_have_count(2)
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
def test_a_bad_upload_names_the_line_in_the_browser(live_server, new_page, curator, tmp_path):
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"kind": "candidate"}\n')
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/import/")
    page.set_input_files("#id_files", str(bad))
    page.click("button:has-text('Import')")
    expect(page.locator(".error-box")).to_contain_text("broken.jsonl, line 1, field id: is required")
