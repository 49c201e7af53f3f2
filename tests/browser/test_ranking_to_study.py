"""In Chromium: a curator sorts the ranking by its headers, ticks rows and opens a study of exactly
those; an annotator skips an item, finds it in their set-aside list and labels it from there."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Study
from annotation.studies import services
from candidates.models import Candidate
from tests.annotation.conftest import import_pool
from tests.browser.conftest import login
from tests.conftest import make_user
from veriharm_site.roles import ANNOTATOR


@pytest.mark.django_db(transaction=True)
def test_a_curator_sorts_the_ranking_ticks_rows_and_opens_a_study_of_them(live_server, new_page, curator):
    import_pool(12)
    make_user("tick-annotator", ANNOTATOR)
    by_id = sorted(Candidate.objects.values_list("external_id", flat=True))
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/")
    first_id = page.locator("table.ranking tbody tr td:nth-child(5) > a").first

    page.click("a[data-sort=id]")
    expect(page.locator("th[aria-sort=ascending] a[data-sort=id]")).to_be_visible()
    expect(first_id).to_have_text(by_id[0])
    page.click("a[data-sort=id]")
    expect(page.locator("th[aria-sort=descending] a[data-sort=id]")).to_be_visible()
    expect(first_id).to_have_text(by_id[-1])

    rows = page.locator("table.ranking tbody tr")
    ticked = [rows.nth(i).locator("td:nth-child(5) > a").inner_text() for i in (0, 2)]
    for i in (0, 2):
        rows.nth(i).locator("input[name=candidates]").check()
    page.click("button:has-text('New study from the ticked rows')")
    expect(page.locator("#id_candidates")).to_have_value("\n".join(ticked))
    page.fill("#id_name", "Ticked rows")
    page.fill("#id_annotators_per_item", "1")
    page.click("button:has-text('Draw the sample and open the study')")
    expect(page.get_by_test_id("drawn-from")).to_contain_text("2 chosen candidates")
    study = Study.objects.get(name="Ticked rows")
    assert sorted(study.items.values_list("candidate__external_id", flat=True)) == sorted(ticked)


@pytest.mark.django_db(transaction=True)
def test_an_annotator_comes_back_to_a_skipped_item_from_the_set_aside_list(live_server, new_page, curator):
    import_pool(12)
    person = make_user("aside-annotator", ANNOTATOR)
    study = services.study_create(
        services.StudySpec(name="Aside study", seed=3, top_k=4, per_group=2, stratify_by="", annotators_per_item=1),
        annotators=[person],
        created_by=curator,
    )
    page = new_page()
    login(page, live_server.url, person.username)
    page.goto(f"{live_server.url}/annotation/")
    page.click("button:has-text('Start')")
    skipped_url = page.url
    with page.expect_navigation():
        page.get_by_test_id("skip").click()
    assert page.url != skipped_url
    page.goto(f"{live_server.url}/annotation/")
    page.click("a:has-text('Set aside (1)')")
    expect(page.get_by_test_id("skipped-item")).to_have_count(1)
    page.click("button:has-text('Label it now')")
    assert page.url == skipped_url
    expect(page.locator("#label-form[data-keys=on]")).to_be_visible()
    for key in ("y", "y", "y"):
        page.keyboard.press(key)
    expect(page.get_by_test_id("valid-preview")).to_have_text("✓ valid")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    labelled = Assignment.objects.get(annotator=person, item__token=skipped_url.rstrip("/").split("/")[-1])
    assert labelled.submitted_at is not None
    page.goto(f"{live_server.url}/annotation/s/{study.pk}/set-aside/")
    expect(page.get_by_test_id("skipped-item")).to_have_count(0)
