"""The pages at 1024 and 1440 px wide: the navigation keeps "Log out" on screen for every role, and the
labelling page keeps the comment box in view beside the task."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.conftest import login
from tests.browser.test_labelling_page import in_view, open_first_item, study  # noqa: F401
from tests.conftest import make_user
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
