"""A curator goes from a run to the comparison of two of its systems and picks the other way round."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login
from tests.evaluation.test_paired_comparison import two_agent_run  # noqa: F401  (the fixture)


@pytest.mark.django_db(transaction=True)
def test_a_curator_compares_two_systems_from_the_run_page(live_server, new_page, curator, two_agent_run):  # noqa: F811
    run, a, b = two_agent_run
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/evaluation/runs/{run.pk}/")
    page.click("[data-testid=compare-link]")
    expect(page.locator("h1")).to_contain_text("Paired comparison")
    # B against A: the differences change sign, McNemar's counts swap.
    page.select_option("select[name=a]", str(b.pk))
    page.select_option("select[name=b]", str(a.pk))
    page.click("button:has-text('Compare')")
    expect(page.locator("[data-testid=compare-counts]")).to_contain_text(f"{b.name} (A) against {a.name} (B)")
    ta = page.locator("[data-testid=paired-differences] tr[data-metric=ta]")
    expect(ta).to_contain_text("−40.0 pp")
    expect(ta.locator("[data-field=interval]")).to_have_text("−80.0 pp to +0.0 pp")
    expect(ta.locator("[data-field=mcnemar-p]")).to_have_text("0.5")
    expect(page.locator("[data-testid=compare-method]")).to_contain_text("McNemar's exact test")
