"""The pages at 1024 and 1440 px wide: the navigation keeps "Log out" on screen for every role, the
labelling page keeps the comment box in view beside the task, and a study's results fit the window."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from annotation.studies import services
from candidates.models import Candidate
from evaluation.models import TrialStatus
from tests.annotation.conftest import import_pool
from tests.annotation.test_quality_control import label_by_number
from tests.browser.conftest import login
from tests.browser.test_labelling_page import in_view, open_first_item, study  # noqa: F401
from tests.conftest import make_user
from tests.factories import AgentFactory, RunFactory, TrialFactory
from veriharm_site.roles import ADMIN, ANNOTATOR, CURATOR, VIEWER

WIDTHS = [(1024, 768), (1440, 900)]


def _page(browser: Browser, width: int, height: int) -> Page:
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    return context.new_page()


def _no_horizontal_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


@pytest.mark.parametrize("width,height", WIDTHS)
def test_every_role_sees_log_out_inside_the_window(transactional_db, browser, live_server, width, height):
    for role in (ANNOTATOR, VIEWER, CURATOR, ADMIN):
        make_user(f"layout-{role}", role)
        page = _page(browser, width, height)
        try:
            login(page, live_server.url, f"layout-{role}")
            # The landing page of the role: the ranking, or the annotator's studies.
            assert "/login/" not in page.url, role
            log_out = page.get_by_role("button", name="Log out")
            assert in_view(page, log_out), (role, log_out.bounding_box(), page.viewport_size)
            for link in page.locator(".topbar nav a").all():
                assert in_view(page, link), (role, link.inner_text())
            assert _no_horizontal_scroll(page), role
        finally:
            page.context.close()


# (1008, 640): a 1024 px wide window on a laptop, less its frame and the browser's own bars.
@pytest.mark.parametrize("width,height", [*WIDTHS, (1008, 640)])
def test_the_comment_box_is_in_view_beside_the_task(study, browser, live_server, width, height):  # noqa: F811
    page = _page(browser, width, height)
    try:
        open_first_item(page, live_server.url, "page-annotator-0")
        comment = page.locator("#id_comment")
        assert in_view(page, comment), (comment.bounding_box(), page.viewport_size)
        assert in_view(page, page.locator("#submit-label"))
        assert _no_horizontal_scroll(page)
        # Typing in it keeps it where it is.
        page.keyboard.press("c")
        page.keyboard.type("The backups line reads as a harm.")
        assert in_view(page, comment)
    finally:
        page.context.close()


def _results_study(curator):
    """A labelled study as a pipeline gives it: ids of underscores that do not wrap, three judges,
    strata, three annotators (one of them quick), and two agents' harm-test results per item."""
    import_pool(40)
    people = [make_user(f"width-annotator-{i}", ANNOTATOR) for i in range(3)]
    labelled = services.study_create(
        services.StudySpec(name="Results width", seed=7, top_k=10, per_group=4, stratify_by="risk_category"),
        annotators=people,
        created_by=curator,
    )
    plans = [(True, True, True), (False, True, True), (True, False, True)]
    for index, person in enumerate(people):
        label_by_number(
            labelled,
            person,
            dict.fromkeys(range(1, 9), plans[index]),
            seconds=lambda n, i=index: 1.0 if i == 0 else 35.0,
        )
    sampled = Candidate.objects.filter(study_items__study=labelled)
    for candidate in sampled:
        Candidate.objects.filter(pk=candidate.pk).update(
            external_id=f"bashbench_{candidate.pk:05d}__mini_swe_agent_claude_sonnet_4_5__proposer_gpt_5__iteration_3"
        )
    agents = [AgentFactory(name="mini-swe-agent/claude-sonnet-4-5"), AgentFactory(name="codex-cli/gpt-5-codex-high")]
    run = RunFactory(agents=agents)
    for candidate in sampled:
        for agent in agents:
            TrialFactory(run=run, candidate=candidate, agent=agent, status=TrialStatus.DONE, r_harm=1)
    return labelled


@pytest.mark.parametrize("width,height", WIDTHS)
def test_the_study_results_fit_the_window(transactional_db, curator, browser, live_server, width, height):
    labelled = _results_study(curator)
    page = _page(browser, width, height)
    try:
        login(page, live_server.url, curator.username)
        page.goto(f"{live_server.url}/annotation/studies/{labelled.pk}/results/")
        # The page holds what makes it wide: the quick-label warning, the judges, the harm tests.
        for part in ("quick-labels", "judge-valid", "items", "harm-results"):
            assert page.get_by_test_id(part).count(), part
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        table = page.get_by_test_id("items").bounding_box()
        assert table is not None and table["x"] + table["width"] <= width
        # An item's page, with the task's diff, the harm test and the judges, fits too.
        page.goto(f"{live_server.url}/annotation/studies/{labelled.pk}/items/1/")
        for part in ("diff", "item-harm-test", "item-judges", "majority-legend"):
            assert page.get_by_test_id(part).count(), part
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        page.context.close()
