"""A generation run of many searches, read while it goes: its page shows a page of searches with
page numbers, and when searches end its figures change in place (no reload, which would re-read
Table 1 and the searches every few seconds); the run's end shows its final tables."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from evaluation.generation.models import GenerationRun, GenerationSearch
from evaluation.generation.states import RunStatus, SearchEnding, SearchStatus
from tests.browser.conftest import login
from tests.factories import AgentFactory

SEARCHES = 60  # a page and a bit


def _running_run(user) -> GenerationRun:
    run = GenerationRun.objects.create(
        name="many searches",
        created_by=user,
        budget=3,
        backend="local",
        proposer_configs=[{"kind": "scripted", "name": "scripted demo proposer"}],
        judge_configs=[{"kind": "scripted", "temperament": "strict", "name": "scripted demo judge (strict)"}],
    )
    agent = AgentFactory(name="target-many")
    run.agents.set([agent])
    GenerationSearch.objects.bulk_create(
        GenerationSearch(
            run=run, agent=agent, source_task_id=f"task-{n:03d}", source_task={}, proposer="scripted demo proposer"
        )
        for n in range(SEARCHES)
    )
    return run


def _end(searches, ending: str, kept_iteration: int | None = None) -> None:
    searches.update(
        status=SearchStatus.FINISHED, ending=ending, kept_iteration=kept_iteration, finished_at=timezone.now()
    )


@pytest.mark.django_db(transaction=True)
def test_the_run_page_pages_its_searches_and_updates_its_figures_in_place(live_server, new_page, curator):
    run = _running_run(curator)
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/evaluation/generation/runs/{run.pk}/")
    progress = page.locator("[data-testid=progress]")
    expect(progress.locator('[data-field="total"]')).to_have_text(str(SEARCHES))
    expect(page.locator("[data-testid=searches] tbody tr")).to_have_count(50)
    expect(page.locator(".pagination")).to_contain_text("Page 1 of 2")
    page.evaluate("window.loadedOnce = true")

    # Two searches end: one kept at iteration 1, one out of iterations.
    searches = run.searches.order_by("pk")
    _end(GenerationSearch.objects.filter(pk=searches[0].pk), SearchEnding.KEPT, 1)
    _end(GenerationSearch.objects.filter(pk=searches[1].pk), SearchEnding.BUDGET_EXHAUSTED)
    expect(progress.locator('[data-field="done"]')).to_have_text("2", timeout=10_000)
    expect(progress.locator("[data-testid=kept-count]")).to_have_text("1")
    expect(progress.locator('[data-ending="kept"]')).to_have_text("1")
    expect(progress.locator('[data-ending="budget_exhausted"]')).to_have_text("1")
    expect(progress.locator("[data-testid=ended-since]")).to_be_visible()
    expect(progress.locator('[data-field="ended_since"]')).to_have_text("2")
    # The same page: nothing reloaded it, and its tables are as they were read.
    assert page.evaluate("window.loadedOnce") is True
    expect(page.locator("[data-testid=no-report]")).to_be_visible()

    # The second page of searches, by its link.
    page.click(".pagination >> text=Next")
    expect(page).to_have_url(f"{live_server.url}/evaluation/generation/runs/{run.pk}/?page=2")
    expect(page.locator("[data-testid=searches] tbody tr")).to_have_count(SEARCHES - 50)
    expect(page.locator(".pagination")).to_contain_text("Page 2 of 2")
    expect(page.locator("[data-testid=searches]")).to_contain_text(f"task-{SEARCHES - 1:03d}")

    # The run ends: the page is shown again once, with Table 1.
    page.evaluate("window.loadedOnce = true")
    _end(GenerationSearch.objects.filter(run=run, status=SearchStatus.QUEUED), SearchEnding.BUDGET_EXHAUSTED)
    GenerationRun.objects.filter(pk=run.pk).update(status=RunStatus.FINISHED, finished_at=timezone.now())
    expect(page.locator("[data-testid=search-report]")).to_contain_text("target-many", timeout=10_000)
    expect(progress.locator('[data-field="status_label"]')).to_have_text("Finished")
    assert page.evaluate("window.loadedOnce") is None
