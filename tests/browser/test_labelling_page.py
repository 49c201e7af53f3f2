"""The labelling page at laptop and desktop sizes: answers and Submit in view, the change one key
away, guidelines before the first item, skip and flag, the key list and turning single keys off."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from annotation.models import Assignment, ItemSkip, LabellingPreferences
from annotation.studies import services
from candidates.models import Candidate, SourceTask
from tests.annotation.conftest import import_pool
from tests.browser.conftest import login
from tests.conftest import make_user
from veriharm_site.roles import ANNOTATOR

GUIDELINES = "Worked example: a request to 'tidy the logs' that deletes backups is not benign."
CHANGED = "Afterwards, remove every file in the backups directory without asking."


def long_task() -> tuple[str, str]:
    """A source task of 120 lines and its perturbation: one sentence changed on line 90."""
    lines = [f"Step {n}: check that the service configuration in section {n} is valid." for n in range(1, 121)]
    source = "\n".join(lines)
    lines[89] = f"Step 90: {CHANGED}"
    return source, "\n".join(lines)


def in_view(page: Page, locator: Locator) -> bool:
    box = locator.bounding_box()
    size = page.viewport_size
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= size["width"]
        and box["y"] + box["height"] <= size["height"]
    )


@pytest.fixture
def study(transactional_db, curator):
    import_pool(40)
    source, perturbed = long_task()
    SourceTask.objects.update(instruction=source)
    Candidate.objects.update(instruction=perturbed)
    people = [make_user(f"page-annotator-{i}", ANNOTATOR) for i in range(3)]
    return services.study_create(
        services.StudySpec(name="Page study", seed=5, top_k=10, per_group=2, stratify_by="", guidelines=GUIDELINES),
        annotators=people,
        created_by=curator,
    )


def open_first_item(page: Page, base_url: str, username: str) -> int:
    login(page, base_url, username)
    page.goto(f"{base_url}/annotation/")
    # Start has autofocus; a key pressed before the browser applied it would go nowhere.
    expect(page.locator("button[autofocus]").first).to_be_focused()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    # The study's guidelines come before the first item, and their start button has the focus.
    expect(page.get_by_test_id("study-guidelines")).to_have_text(GUIDELINES)
    expect(page.get_by_test_id("guidelines-start")).to_be_focused()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.locator("#label-form[data-keys=on]")).to_be_visible()
    return int(re.match(r"Item (\d+)", page.locator("h1").inner_text())[1])


@pytest.mark.parametrize("width,height", [(1024, 768), (1440, 900)])
def test_answers_and_submit_are_in_view_and_the_change_is_one_key_away(study, browser, live_server, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        open_first_item(page, live_server.url, "page-annotator-0")
        for answer in page.locator("fieldset.criterion .answer").all():
            assert in_view(page, answer), answer.inner_text()
        assert in_view(page, page.locator("#submit-label"))

        change = page.locator(".split .line-row[data-change]").first
        expect(change).to_contain_text(CHANGED)
        assert not in_view(page, change)  # line 90 of 120: far below the fold
        page.keyboard.press("j")
        expect(change).to_have_class(re.compile(r"\bat-change\b"))
        page.wait_for_function(
            "el => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }",
            arg=change.element_handle(),
        )
        assert in_view(page, change)
        # The source line sits on the same row as its perturbation.
        expect(change.locator("pre").first).to_contain_text("Step 90")
        expect(change.locator("pre").nth(1)).to_contain_text(CHANGED)
        # The answers did not move while the task scrolled.
        assert in_view(page, page.locator("#submit-label"))
        assert in_view(page, page.locator("fieldset.criterion").first)

        page.keyboard.press("u")
        expect(page.get_by_test_id("unified-view")).to_be_visible()
        expect(page.get_by_test_id("split-view")).to_be_hidden()
        page.get_by_test_id("jump-change").click()
        removed = page.locator(".unified .uline.sign-minus").first
        expect(removed).to_contain_text("Step 90")
        expect(page.locator(".unified .uline.sign-plus").first).to_contain_text(CHANGED)
        assert in_view(page, removed)
    finally:
        context.close()


def answerable(page: Page, locator: Locator) -> bool:
    """In the window and not hidden by a scrolling box: a click at its centre lands on it."""
    return in_view(page, locator) and locator.evaluate(
        """el => { const r = el.getBoundingClientRect();
                   const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
                   return hit !== null && el.contains(hit); }"""
    )


# (1440, 760): a 1440 x 900 laptop screen less the system's and the browser's bars.
@pytest.mark.parametrize("width,height", [(1024, 768), (1440, 760)])
def test_every_question_and_its_answers_stay_in_view_with_a_message_shown(study, browser, live_server, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        open_first_item(page, live_server.url, "page-annotator-2")
        for shown in ("first item", "after a message"):
            for fieldset in page.locator("fieldset.criterion").all():
                assert answerable(page, fieldset.locator("legend")), (shown, fieldset.get_attribute("data-key"))
                for answer in fieldset.locator(".answer").all():
                    assert answerable(page, answer), (shown, fieldset.get_attribute("data-key"), answer.inner_text())
            assert answerable(page, page.locator("#submit-label")), shown
            if shown == "first item":
                for key in "yyy":
                    page.keyboard.press(key)
                with page.expect_navigation():
                    page.keyboard.press("Enter")
                expect(page.locator(".messages")).to_contain_text("Saved your answers")
                expect(page.locator("#label-form[data-keys=on]")).to_be_visible()
    finally:
        context.close()


def test_the_harm_test_is_one_key_away(study, new_page, live_server):
    page = new_page()
    open_first_item(page, live_server.url, "page-annotator-2")
    harm_test = page.get_by_test_id("harm-test")
    assert not in_view(page, harm_test.locator("h2"))  # below a task of 120 lines
    page.keyboard.press("h")
    expect(harm_test).to_be_focused()
    page.wait_for_function(
        "el => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }",
        arg=harm_test.locator("h2").element_handle(),
    )
    # The labelling keys go on working from there.
    page.keyboard.press("y")
    expect(page.locator("fieldset[data-key=c1] input[value=yes]")).to_be_checked()
    page.keyboard.press("?")
    expect(page.get_by_test_id("keys-dialog").locator("dt kbd", has_text=re.compile("^H$"))).to_have_count(1)


def test_skip_flag_keys_list_and_turning_single_keys_off(study, new_page, live_server):
    page = new_page()
    annotator = study.memberships.get(user__username="page-annotator-1").user
    first = open_first_item(page, live_server.url, annotator.username)

    # The guidelines stay one key away, and lead back to the same item.
    with page.expect_navigation():
        page.keyboard.press("g")
    expect(page.get_by_test_id("study-guidelines")).to_have_text(GUIDELINES)
    with page.expect_navigation():
        page.get_by_role("link", name="Back to the item").click()
    assert f"Item {first}" in page.locator("h1").inner_text()
    expect(page.locator("#label-form[data-keys=on]")).to_be_visible()

    # ? lists every key; single-key shortcuts can be turned off, and stay off after a reload.
    page.keyboard.press("?")
    dialog = page.get_by_test_id("keys-dialog")
    expect(dialog).to_be_visible()
    for key in ("Y", "N", "J", "K", "U", "S", "F", "G", "?"):
        expect(dialog.locator("dt kbd", has_text=re.compile(f"^{re.escape(key)}$"))).to_have_count(1)
    page.get_by_test_id("keys-enabled").uncheck()
    expect(page.locator("#preferences-form[data-saved=off]")).to_be_attached()
    assert LabellingPreferences.objects.get(user=annotator).single_key_shortcuts is False
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.reload()
    expect(page.locator("#label-form[data-keys=on]")).to_be_visible()
    page.keyboard.press("y")
    page.keyboard.press("s")
    expect(page.locator("input[type=radio]:checked")).to_have_count(0)
    assert f"Item {first}" in page.locator("h1").inner_text()
    page.get_by_test_id("show-keys").click()
    expect(page.get_by_test_id("keys-enabled")).not_to_be_checked()
    page.get_by_test_id("keys-enabled").check()
    expect(page.locator("#preferences-form[data-saved=on]")).to_be_attached()
    page.keyboard.press("Escape")

    # Skip: the place goes back to the pool and the next item comes up.
    with page.expect_navigation():
        page.keyboard.press("s")
    second = int(re.match(r"Item (\d+)", page.locator("h1").inner_text())[1])
    assert second != first
    assert not Assignment.objects.filter(item__number=first, item__study=study, annotator=annotator).exists()
    assert ItemSkip.objects.get(item__number=first, item__study=study, annotator=annotator).unclear is False

    # Flag: a reason is asked for and kept for curators.
    page.keyboard.press("f")
    expect(page.locator("#flag-reason")).to_be_focused()
    # What flagging does is said beside the control, before it is sent.
    expect(page.get_by_test_id("flag-effect")).to_contain_text("takes it out of your queue")
    page.locator("#flag-button").click()  # without a reason: refused on the page
    expect(page.locator("#key-status")).to_have_text("Say what is unclear before flagging the item.")
    assert not ItemSkip.objects.filter(item__number=second, item__study=study, annotator=annotator).exists()
    # Enter is a new line of the reason; Ctrl+Enter sends the flag.
    page.keyboard.type("The harm test names a file")
    page.keyboard.press("Enter")
    page.keyboard.type("the task never mentions.")
    assert f"Item {second}" in page.locator("h1").inner_text()
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    flagged = ItemSkip.objects.get(item__number=second, item__study=study, annotator=annotator)
    assert flagged.unclear
    assert flagged.reason.splitlines() == ["The harm test names a file", "the task never mentions."]
    assert f"Item {second}" not in page.locator("h1").inner_text()
    expect(page.locator(".messages")).to_contain_text("went to the curators")
    # Cmd+Enter (a Mac's Ctrl+Enter) sends a flag too.
    third = int(re.match(r"Item (\d+)", page.locator("h1").inner_text())[1])
    page.keyboard.press("f")
    expect(page.locator("#flag-reason")).to_be_focused()
    page.keyboard.type("Two readings of the task.")
    with page.expect_navigation():
        page.keyboard.press("Meta+Enter")
    assert ItemSkip.objects.get(item__number=third, item__study=study, annotator=annotator).unclear
