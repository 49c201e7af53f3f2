"""A curator reviews the top-K with the keyboard, freezes the approved set and downloads it."""

import hashlib
import json
import tarfile

import pytest
from playwright.sync_api import expect

from candidates.models import Decision, Release
from tests.browser.conftest import login
from tests.factories import CandidateLineFactory, jsonl
from tests.importing import candidate_import_streams

FIRST = "bb-187101/gpt-5.4-mini/claude-opus-4-7"
SECOND = "bb-319395/kimi-k2.5/gpt-5.5"
THIRD = "browser-third"


def review_page_shows(page, external_id: str) -> None:
    """The review page of this candidate is shown and its keyboard script is listening."""
    expect(page.locator("h1")).to_contain_text(external_id)
    expect(page.locator("#review[data-keys=on]")).to_have_count(1)


@pytest.mark.django_db(transaction=True)
def test_curator_reviews_with_the_keyboard_freezes_and_downloads(
    live_server, new_page, curator, examples_imported, tmp_path
):
    candidate_import_streams(
        [("x.jsonl", jsonl(CandidateLineFactory(id=THIRD, scores=(3, 3, 3, 3, 3))).splitlines(True))]
    )
    page = new_page()
    login(page, live_server.url, curator.username)
    page.click("nav >> text=Review")
    expect(page.locator("[data-testid=queue-progress]")).to_contain_text("0 of 3 decided")
    page.click("[data-testid=start-review]")
    review_page_shows(page, FIRST)

    page.keyboard.press("a")  # approve, reason "valid"
    review_page_shows(page, SECOND)
    expect(page.locator(".messages")).to_contain_text(f"Approved {FIRST}")
    expect(page.locator("[data-testid=progress]")).to_contain_text("1 of 3 decided")

    page.keyboard.press("r")  # no reason picked yet: the page asks for one and stays
    expect(page.locator("[data-testid=review-message]")).to_contain_text("Pick a reason to reject first")
    expect(page.locator("h1")).to_contain_text(SECOND)
    page.keyboard.press("3")
    expect(page.locator("input[name=reason][value=harm_test_wrong]")).to_be_checked()
    page.keyboard.press("r")
    review_page_shows(page, THIRD)

    page.keyboard.press("k")  # back to the rejected one, then on again
    review_page_shows(page, SECOND)
    expect(page.locator("[data-testid=current-verdict]")).to_have_text("Rejected")
    page.keyboard.press("j")
    review_page_shows(page, THIRD)

    page.keyboard.press("5")  # "other" needs a note
    page.keyboard.press("a")
    expect(page.locator("[data-testid=review-message]")).to_contain_text("Say why in the note")
    expect(page.locator("textarea[name=note]")).to_be_focused()
    page.keyboard.type("borderline, but the harm test is specific enough")
    page.keyboard.press("Escape")
    page.keyboard.press("a")
    expect(page.locator("[data-testid=queue-progress]")).to_contain_text("3 of 3 decided")

    decisions = {
        d.candidate.external_id: (d.verdict, d.reason, d.note) for d in Decision.objects.select_related("candidate")
    }
    assert decisions == {
        FIRST: ("approve", "valid", ""),
        SECOND: ("reject", "harm_test_wrong", ""),
        THIRD: ("approve", "other", "borderline, but the harm test is specific enough"),
    }

    page.click("nav >> text=Releases")
    page.fill("#id_name", "veriharm-bench")
    page.fill("#id_version", "1.0")
    page.click("text=Create draft")
    expect(page.locator("[data-testid=release-state]")).to_have_text("draft")
    expect(page.locator("[data-testid=release-items] tbody tr")).to_have_count(2)
    page.click("[data-testid=freeze]")
    expect(page.locator("[data-testid=confirm-step] h1")).to_have_text("Freeze veriharm-bench 1.0?")
    page.click("[data-testid=confirm]")
    expect(page.locator("[data-testid=release-state]")).to_have_text("frozen")
    release = Release.objects.get()
    expect(page.locator("[data-testid=checksum]")).to_have_text(release.checksum)
    expect(page.locator("[data-testid=changelog-summary]")).to_contain_text("2 added")

    with page.expect_download() as bundle_download:
        page.click("[data-testid=download-bundle]")
    bundle = bundle_download.value
    assert bundle.suggested_filename == "veriharm-bench-1.0.tar.gz"
    path = tmp_path / bundle.suggested_filename
    bundle.save_as(path)
    with tarfile.open(path, "r:gz") as tar:
        manifest = json.load(tar.extractfile("veriharm-bench-1.0/manifest.json"))
        jsonl_bytes = tar.extractfile("veriharm-bench-1.0/release.jsonl").read()
    assert [i["id"] for i in manifest["instances"]] == [FIRST, THIRD]
    assert manifest["release"]["checksum"] == release.checksum == hashlib.sha256(jsonl_bytes).hexdigest()

    with page.expect_download() as jsonl_download:
        page.click("[data-testid=download-jsonl]")
    saved = tmp_path / "release.jsonl"
    jsonl_download.value.save_as(saved)
    assert saved.read_bytes() == jsonl_bytes


@pytest.mark.django_db(transaction=True)
def test_approving_a_flagged_candidate_warns_first(live_server, new_page, curator, examples_imported):
    from tests.candidates.test_flag_warnings import REASON, WARNING, record_references

    record_references(SECOND, noop=(0, 1))  # rank 2: its V_harm passes on the untouched environment
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/review/2/")
    review_page_shows(page, SECOND)
    expect(page.locator("[data-testid=flags]")).to_contain_text(REASON)

    page.keyboard.press("a")
    dialog = page.locator("[data-testid=flag-warning]")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(REASON)
    page.keyboard.press("Escape")  # cancel: nothing is posted
    expect(dialog).to_be_hidden()
    expect(page.locator("[data-testid=review-message]")).to_contain_text("Not approved")
    expect(page.locator("h1")).to_contain_text(SECOND)
    assert not Decision.objects.exists()

    page.click("[data-testid=approve]")  # the mouse gets the same warning
    expect(dialog).to_be_visible()
    page.click("[data-testid=cancel-approve]")
    expect(dialog).to_be_hidden()
    assert not Decision.objects.exists()

    page.keyboard.press("a")
    expect(dialog).to_be_visible()
    page.keyboard.press("y")  # approve anyway
    expect(page.locator(".messages")).to_contain_text(f"Approved {SECOND} (rank 2) despite its flags")
    decision = Decision.objects.get()
    assert (decision.candidate.external_id, decision.verdict, decision.flag_warning) == (SECOND, "approve", WARNING)
    page.goto(f"{live_server.url}/candidates/c/{SECOND}/")
    expect(page.locator("[data-testid=decision-warning]")).to_contain_text(WARNING)


@pytest.mark.django_db(transaction=True)
def test_the_note_takes_typing_and_ctrl_enter_submits_it(live_server, new_page, curator, examples_imported):
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/review/1/")
    review_page_shows(page, FIRST)
    note = page.locator("textarea[name=note]")

    page.keyboard.press("5")  # "other" needs a note: r opens it, and the r is not typed into it
    page.keyboard.press("r")
    expect(note).to_be_focused()
    expect(note).to_have_value("")
    page.keyboard.type("duplicate of rank 3")
    page.keyboard.press("r")  # typing: no shortcut fires while in the note
    page.keyboard.press("n")
    page.keyboard.press("j")
    expect(note).to_have_value("duplicate of rank 3rnj")
    expect(page.locator("h1")).to_contain_text(FIRST)
    assert not Decision.objects.exists()
    for _ in range(3):
        page.keyboard.press("Backspace")
    page.keyboard.press("Control+Enter")  # submits the decision the note was opened for
    review_page_shows(page, SECOND)
    decision = Decision.objects.get()
    assert (decision.candidate.external_id, decision.verdict, decision.reason, decision.note) == (
        FIRST,
        "reject",
        "other",
        "duplicate of rank 3",
    )

    page.keyboard.press("n")  # n opens the note without typing itself
    expect(note).to_be_focused()
    expect(note).to_have_value("")
    page.keyboard.type("looks fine")
    page.keyboard.press("Escape")  # leaves the note: keys are shortcuts again
    expect(note).not_to_be_focused()
    page.keyboard.press("a")
    expect(page.locator(".messages")).to_contain_text(f"Approved {SECOND}")
    approved = Decision.objects.get(candidate__external_id=SECOND)
    assert (approved.verdict, approved.note) == ("approve", "looks fine")


@pytest.mark.django_db(transaction=True)
def test_approve_on_the_candidate_page_then_reject_the_rest_in_bulk(live_server, new_page, curator, examples_imported):
    candidate_import_streams(
        [("x.jsonl", jsonl(CandidateLineFactory(id=THIRD, scores=(3, 3, 3, 3, 3))).splitlines(True))]
    )
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/c/{FIRST}/")
    decide = page.locator("[data-testid=decide]")
    expect(decide.locator("form[data-reasons-follow=on]")).to_have_count(1)
    decide.locator("[data-testid=decide-approve]").check()
    # Only the reasons that fit an approval stay offered.
    expect(decide.locator("label.reason:has(input[value=harm_requested])")).to_be_hidden()
    decide.locator("input[name=reason][value=valid]").check()
    decide.locator("[data-testid=record-decision]").click()
    expect(page.locator(".messages")).to_contain_text(f"Approved {FIRST}.")
    expect(page.locator("[data-testid=current-verdict]")).to_have_text("Approved")

    page.goto(f"{live_server.url}/candidates/review/?decision=undecided")
    expect(page.locator("[data-testid=queue-rows] tbody tr")).to_have_count(2)
    expect(page.locator("#bulk-decision[data-select-page=on]")).to_have_count(1)
    page.locator("[data-testid=select-page]").check()
    expect(page.locator("[data-testid=bulk-count]")).to_have_text("2 ticked")
    page.locator("[data-testid=bulk-verdict]").select_option("reject")
    page.locator("[data-testid=bulk-reason]").select_option("unrealistic")
    page.locator("[data-testid=bulk-apply]").click()
    expect(page.locator("[data-testid=confirm-step] h1")).to_contain_text("Reject 2 candidates as")
    assert Decision.objects.count() == 1  # the confirm step records nothing
    page.locator("[data-testid=confirm]").click()
    expect(page.locator(".messages")).to_contain_text("Rejected 2 candidates")
    expect(page.locator("[data-testid=queue-progress]")).to_contain_text("3 of 3 decided")
    expect(page.locator("[data-testid=queue-rows] tbody tr")).to_contain_text("No candidate of the top-")
    assert page.url.endswith("/candidates/review/?decision=undecided")
    decisions = {d.candidate.external_id: (d.verdict, d.reason) for d in Decision.objects.select_related("candidate")}
    assert decisions == {
        FIRST: ("approve", "valid"),
        SECOND: ("reject", "unrealistic"),
        THIRD: ("reject", "unrealistic"),
    }
