"""A curator on the review page of a candidate the annotators judged invalid sees their majority and
must tick the acknowledgement before the approval goes through."""

import pytest
from playwright.sync_api import expect

from candidates.models import Decision
from tests.browser.conftest import login
from tests.candidates.test_human_validation_guard import VOTES, WARNING, judged_candidates


@pytest.mark.django_db(transaction=True)
def test_approving_what_humans_rejected_on_the_review_page(live_server, new_page, curator):
    rejected, _ = judged_candidates(curator)
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/review/{rejected.rank}/")
    expect(page.locator("#review[data-keys=on]")).to_have_count(1)
    expect(page.locator("#review [data-testid=human-majority]")).to_have_text(f"Humans: invalid, {VOTES}")

    page.keyboard.press("a")
    expect(page.locator("[data-testid=acknowledge-human-error]")).to_contain_text("humans judged")
    assert not Decision.objects.exists()

    page.locator("[data-testid=acknowledge-human-verdict] input").check()
    page.locator("[data-testid=approve]").click()
    expect(page.locator(".messages")).to_contain_text(f"Approved {rejected.external_id}")
    expect(page.locator(".messages")).to_contain_text("despite humans' rejection")
    assert Decision.objects.get().flag_warning == WARNING
