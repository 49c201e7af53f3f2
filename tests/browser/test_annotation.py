"""Three annotators label every item of a small study with the keyboard alone; the curator then
sees the majority vote and the agreement figures."""

from __future__ import annotations

import re

import krippendorff
import numpy as np
import pytest
from playwright.sync_api import Page, expect
from statsmodels.stats.inter_rater import fleiss_kappa

from annotation.studies import services
from annotation.studies.measures import statistics
from tests.annotation.conftest import import_pool
from tests.browser.conftest import login
from tests.conftest import PASSWORD, make_user
from veriharm_site.roles import ANNOTATOR

# Each annotator's way of answering "no": which criterion they reject when they find an item invalid.
INVALID_KEYS = ("yyn", "nyy", "yny")


def judged_valid(annotator: int, number: int) -> bool:
    """The plan: the first two annotators find the odd items valid; the third finds items 1 and 2 valid."""
    return number in (1, 2) if annotator == 2 else number % 2 == 1


def keys_for(annotator: int, number: int) -> str:
    return "yyy" if judged_valid(annotator, number) else INVALID_KEYS[annotator]


def login_by_keyboard(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/login/")
    # The user name field has autofocus; typing before the browser applied it would type into nothing.
    expect(page.locator("#id_username")).to_be_focused()
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def label_everything(page: Page, annotator: int, items: int) -> list[int]:
    """From the landing page, with keys only: Enter to start, Y/N per question, Enter to submit."""
    expect(page.locator("h1")).to_have_text("Your annotation studies")
    expect(page.locator("button[autofocus]").first).to_be_focused()
    with page.expect_navigation():
        page.keyboard.press("Enter")  # the Start button has focus
    seen = []
    while "/done/" not in page.url:
        expect(page.locator("#label-form[data-keys=on]")).to_be_visible()
        number = int(re.match(r"Item (\d+)", page.locator("h1").inner_text())[1])
        expect(page.get_by_test_id("progress")).to_contain_text(f"{len(seen)} done / {items} assigned")
        for key in keys_for(annotator, number):
            page.keyboard.press(key)
        expect(page.get_by_test_id("valid-preview")).to_have_text(
            "✓ valid" if judged_valid(annotator, number) else "✗ not valid"
        )
        if annotator == 0 and number == 2:
            page.keyboard.press("c")  # jump to the comment, write, leave it
            page.keyboard.type("The harm test checks the wrong file.")
            page.keyboard.press("Escape")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        seen.append(number)
        assert len(seen) <= items
    expect(page.get_by_test_id("done")).to_contain_text("Nothing left for you to label")
    return seen


@pytest.mark.django_db(transaction=True)
def test_three_annotators_label_by_keyboard_and_the_curator_sees_the_results(live_server, new_page, curator):
    import_pool(40)
    people = [make_user(f"kb-annotator-{i}", ANNOTATOR) for i in range(3)]
    study = services.study_create(
        services.StudySpec(name="Keyboard study", seed=21, top_k=10, per_group=2, stratify_by="perturbation"),
        annotators=people,
        created_by=curator,
    )
    numbers = sorted(study.items.values_list("number", flat=True))
    assert numbers == [1, 2, 3, 4]

    for index, person in enumerate(people):
        page = new_page()
        login_by_keyboard(page, live_server.url, person.username)
        assert sorted(label_everything(page, index, len(numbers))) == numbers

    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/annotation/studies/{study.pk}/results/")
    rows = page.get_by_test_id("items")
    for n in numbers:
        votes = [judged_valid(a, n) for a in range(3)]
        majority = statistics.majority(votes, 3)
        cell = rows.locator(f"tr[data-item='{n}'] td[data-measure=valid]")
        expect(cell).to_contain_text("✓ yes" if majority else "✗ no")
        expect(cell).to_contain_text(f"{sum(votes)}–{3 - sum(votes)}")

    table = np.array(
        [[sum(judged_valid(a, n) for a in range(3)), sum(not judged_valid(a, n) for a in range(3))] for n in numbers]
    )
    kappa = fleiss_kappa(table)
    alpha = krippendorff.alpha(
        reliability_data=[[float(judged_valid(a, n)) for n in numbers] for a in range(3)],
        level_of_measurement="nominal",
    )
    valid_row = page.get_by_test_id("agreement").locator("tr[data-measure=valid]")
    expect(valid_row).to_contain_text(f"{kappa:.3f}")
    expect(valid_row).to_contain_text(f"{alpha:.3f}")
    expect(valid_row).to_contain_text(statistics.landis_koch(kappa))
    expect(page.locator("[data-testid=summary]")).to_contain_text("12 / 12")

    page.goto(f"{live_server.url}/annotation/studies/{study.pk}/disagreement/")
    expect(page.locator("body")).to_contain_text("The harm test checks the wrong file.")
