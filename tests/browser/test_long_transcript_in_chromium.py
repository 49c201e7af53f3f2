"""A trial of 2,000 steps read in Chromium at 1024 and 1440 pixels wide: a page of folded steps,
one line each, one opened, a search that finds a step on another page and opens it there, and
nothing wider than the window."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import login
from tests.evaluation.transcript_helpers import NEEDLE, NEEDLE_AT, UNBROKEN, long_transcript_trial


def _page(browser: Browser, width: int) -> Page:
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(15_000)
    return context.new_page()


def _no_horizontal_overflow(page: Page) -> None:
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide in a window of {widths[1]}"


@pytest.mark.parametrize("width", [1024, 1440])
@pytest.mark.django_db(transaction=True)
def test_a_long_transcript_is_folded_paged_and_searchable(live_server, browser, curator, width):
    trial = long_transcript_trial(2000)
    page = _page(browser, width)
    try:
        login(page, live_server.url, curator.username)
        page.goto(f"{live_server.url}/evaluation/trials/{trial.pk}/")
        steps = page.locator("[data-testid=transcript] > [data-testid=step]")
        expect(steps).to_have_count(100)
        expect(page.locator("[data-testid=step-total]")).to_have_text("2000 steps")
        # Folded: no step's text is shown, and each step is a single line of the same height.
        assert page.locator("[data-testid=transcript] details[open]").count() == 0
        expect(page.locator("[data-testid=step-output]").first).to_be_hidden()
        heights = page.eval_on_selector_all(
            "[data-testid=transcript] summary", "rows => rows.map(row => row.getBoundingClientRect().height)"
        )
        line = page.eval_on_selector(
            "[data-testid=transcript] summary .step-line", "el => parseFloat(getComputedStyle(el).lineHeight)"
        )
        assert len(heights) == 100 and max(heights) < 2 * line, (max(heights), line)
        seventh = page.locator("#step-1-7 summary")
        expect(seventh).to_contain_text("$ ls -la /srv/data/part-0007")
        expect(seventh.locator("[data-testid=step-exit]")).to_have_text("exit 1")
        expect(seventh.locator("[data-testid=step-duration]")).to_have_text("0.07 s")
        _no_horizontal_overflow(page)

        # Opening one shows its output; the line 3,000 characters long wraps inside the page.
        page.locator("#step-1-3 summary").click()
        output = page.locator("#step-1-3 [data-testid=step-output]")
        expect(output).to_be_visible()
        expect(output).to_contain_text(UNBROKEN[:200])
        expect(page.locator("#step-1-4 [data-testid=step-output]")).to_be_hidden()
        _no_horizontal_overflow(page)

        # The agent's configuration is folded too, its playbook an indented object once opened.
        config = page.locator("[data-testid=agent-config]")
        expect(config.locator("dl")).to_be_hidden()
        config.locator("summary").first.click()
        config.locator("[data-testid=embedded-json] summary").click()
        expect(config.locator("[data-testid=embedded-json]")).to_contain_text('"Archive the logs of service 0": {')
        _no_horizontal_overflow(page)

        # A search finds the one step that holds the word, on page 16, and leads there opened.
        page.fill("input[name=q][aria-label='Search the transcript']", NEEDLE)
        page.press("input[name=q][aria-label='Search the transcript']", "Enter")
        expect(page.locator("[data-testid=transcript-found]")).to_contain_text("1 of 2000 steps hold")
        expect(steps).to_have_count(1)
        expect(steps.first.locator("mark").first).to_have_text(NEEDLE)
        steps.first.locator("summary").click()
        page.click("[data-testid=step-context]")
        page.wait_for_url(f"**/?page=16#step-1-{NEEDLE_AT}")
        expect(steps).to_have_count(100)
        found = page.locator(f"#step-1-{NEEDLE_AT}")
        expect(found.locator("[data-testid=step-output]")).to_be_visible()
        expect(found.locator("[data-testid=step-output]")).to_contain_text(f"the {NEEDLE} is here")
        expect(found).to_be_in_viewport()
        expect(page.locator(".pagination").first).to_contain_text("Steps 1501–1600 of 2000, page 16 of 20")
        _no_horizontal_overflow(page)

        # Expand all opens the page's steps, fold all closes them again.
        page.click("button[data-steps=open]")
        assert page.locator("[data-testid=transcript] details[open]").count() == 100
        _no_horizontal_overflow(page)
        page.click("button[data-steps=close]")
        assert page.locator("[data-testid=transcript] details[open]").count() == 0
    finally:
        page.context.close()
