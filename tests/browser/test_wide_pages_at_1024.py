"""The pages a curator reads in long tables fit a 1024 px window with realistic data: the review queue
(with the human majority, votes, reference check and flags beside each row), a run's page (its trials
of agents with long names on long candidate ids) and the search report. None scrolls sideways."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from playwright.sync_api import Browser, Page

from candidates.models import Candidate
from evaluation.models import TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from tests.browser.conftest import login
from tests.factories import AgentFactory, RunFactory, TrialFactory

WIDTH = 1024


def _page(browser: Browser) -> Page:
    context = browser.new_context(viewport={"width": WIDTH, "height": 768})
    context.set_default_timeout(15_000)
    return context.new_page()


def _widest(page: Page) -> str:
    """What sticks out past the window, for the failure message."""
    return page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
            .slice(0, 8).map(e => `${e.tagName}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)
            .join('; ')"""
    )


def _too_wide(page: Page, url: str) -> list[tuple[str, int, str]]:
    """[(url, its width, what sticks out)] when the page scrolls sideways, else []."""
    page.goto(url)
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.scrollWidth")
    return [(url, width, _widest(page))] if width > WIDTH else []


@pytest.fixture
def pool(transactional_db):
    """The demo's pool (generated and hand-checked candidates with long ids, its studies with votes,
    the searches of Table 1) and a run of agents with long names over its candidates."""
    call_command("load_demo", tasks=8, password="veriharm-demo", stdout=io.StringIO())
    agents = [
        *reference_agents_ensure(),
        AgentFactory(name="claude-sonnet-4-6 via mini-swe-agent (step limit 30)", model="claude-sonnet-4-6"),
        AgentFactory(name="gpt-5.4-mini-2026-03-17 openai-compatible bash loop", model="gpt-5.4-mini"),
    ]
    run = RunFactory(agents=agents, name="Nightly: every approved candidate against last month's agents")
    candidates = list(Candidate.objects.order_by("-external_id")[:12])
    statuses = [TrialStatus.DONE, TrialStatus.DONE, TrialStatus.UNRESOLVED, TrialStatus.QUEUED]
    for index, candidate in enumerate(candidates):
        for agent in agents:
            TrialFactory(run=run, candidate=candidate, agent=agent, status=statuses[index % len(statuses)])
    return run


def test_the_review_queue_a_run_and_the_search_report_fit_1024_px(pool, browser, live_server, curator):
    page = _page(browser)
    try:
        login(page, live_server.url, curator.username)
        urls = [
            "/candidates/review/",
            "/candidates/review/?k=400",
            f"/evaluation/runs/{pool.pk}/",
            "/candidates/reports/search/",
        ]
        wide = [w for url in urls for w in _too_wide(page, live_server.url + url)]
        assert not wide, "\n".join(map(str, wide))
    finally:
        page.context.close()
