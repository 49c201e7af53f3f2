"""The example candidates with their twins, launched under the V3AST protocol from the pages, run by
the reference agents in four repetitions; the matrix, a system and a task read in Chromium."""

import pytest
from playwright.sync_api import expect

from candidates.services import candidate_import_files
from evaluation.runs.agents import reference_agents_ensure
from tests.browser.conftest import login
from tests.conftest import EXAMPLES

IDS = ["bb-319395/kimi-k2.5/gpt-5.5", "bb-187101/gpt-5.4-mini/claude-opus-4-7"]


@pytest.mark.django_db(transaction=True)
def test_the_matrix_shows_the_examples_run_with_their_twins(
    live_server, new_page, admin_user, curator, annotator, sandboxes_ready, celery_worker_thread
):
    candidate_import_files([str(EXAMPLES / "candidates_with_twins.jsonl")])
    reference_agents_ensure()
    page = new_page()
    login(page, live_server.url, admin_user.username)
    page.click("nav >> text=V3AST matrix")
    page.click("text=Launch a V3AST run")
    expect(page.locator("input[name=protocol][value=v3ast]")).to_be_checked()
    page.fill("#id_name", "examples with twins")
    page.fill("#id_ids", "\n".join(IDS))
    page.check("text=reference-safe")
    page.check("text=reference-harmful")
    page.select_option("#id_backend", "local")
    page.click("button:has-text('Launch')")
    # Repetitions left empty: four under V3AST, for the risk task and its twin.
    expect(page.locator(".messages")).to_contain_text("32 trials queued")
    expect(page.locator("#progress [data-field=status]")).to_have_text("finished", timeout=240_000)
    expect(page.locator("#progress [data-field=done]")).to_have_text("32")

    page.click("[data-testid=v3ast-link]")
    matrix = page.locator("[data-testid=matrix]")
    expect(matrix.locator("thead th")).to_have_text(["Model \\ Harness", "references.harmful", "references.safe"])
    expect(matrix.locator("tbody th")).to_have_text(["reference"])
    harmful = matrix.locator("[data-agent=reference-harmful]")
    safe = matrix.locator("[data-agent=reference-safe]")
    expect(harmful.locator(".asr")).to_have_text("100.0%")
    expect(safe.locator(".asr")).to_have_text("0.0%")
    for cell in (harmful, safe):
        expect(cell).to_contain_text("twin pass 100.0%")
        expect(cell).to_contain_text("2/2 eligible")
    # The heat map: all compromised is the dark end of the scale, none the pale end.
    assert harmful.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(163, 58, 23)"
    assert safe.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(234, 245, 238)"
    expect(page.locator("[data-testid=rank-stability] tbody tr")).to_have_count(6)

    harmful.click()
    expect(page.locator("[data-testid=asr] b")).to_have_text("100.0%")
    expect(page.locator("[data-testid=twin-pass-rate]")).to_contain_text("8 of 8 twin runs CAPABLE")
    chart = page.locator("[data-testid=asr-at-n-chart] svg")
    expect(chart).to_be_visible()
    expect(chart.locator("circle")).to_have_count(4)
    expect(page.locator("[data-testid=by-source]")).to_contain_text("direct")
    page.click(f"[data-testid=system-tasks] >> text={IDS[1]}")

    task_runs = page.locator("[data-testid=task-run]")
    expect(task_runs).to_have_count(16)
    first = page.locator("[data-testid=task-system][data-agent=reference-harmful] [data-testid=task-run]").first
    expect(first.locator("summary")).to_contain_text("COMPROMISED")
    first.locator("summary").click()
    expect(first.locator("[data-testid=harm-evidence]")).to_contain_text("exit 0")
    expect(first.locator("[data-testid=transcript]")).to_contain_text("./solution.sh create")

    reader = new_page()
    login(reader, live_server.url, curator.username)
    reader.click("nav >> text=V3AST matrix")
    expect(reader.locator("text=Launch a V3AST run")).to_have_count(0)
    reader.click("text=examples with twins")
    expect(reader.locator("[data-testid=matrix-cell]")).to_have_count(2)

    outsider = new_page()
    login(outsider, live_server.url, annotator.username)
    expect(outsider.locator("nav >> text=V3AST matrix")).to_have_count(0)
    response = outsider.goto(f"{live_server.url}/evaluation/v3ast/")
    assert response.status == 403
