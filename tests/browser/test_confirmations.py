"""Destructive buttons lead to a confirm step (a page: no JavaScript needed); going back from it
changes nothing, confirming acts."""

import pytest
from playwright.sync_api import expect

from candidates.models import Release
from candidates.releases import services as releases
from evaluation.models import Run, Trial, TrialStatus
from tests.browser.conftest import login
from tests.evaluation.v3ast_helpers import import_tasks, launch, system


@pytest.mark.django_db(transaction=True)
def test_going_back_from_cancel_and_rerun_changes_nothing(live_server, new_page, admin_user):
    ids = import_tasks({"id": "k1"})
    run = launch(ids, [system("s", "model-1", "harness-x")], repetitions=2, name="to keep")
    queued = Trial.objects.filter(run=run, status=TrialStatus.QUEUED).count()
    assert queued == 4

    page = new_page()
    login(page, live_server.url, admin_user.username)
    page.goto(f"{live_server.url}/evaluation/runs/{run.pk}/")
    page.click("[data-testid=cancel]")
    expect(page.locator("[data-testid=confirm-step] h1")).to_have_text("Cancel to keep?")
    page.click("[data-testid=go-back]")
    expect(page).to_have_url(f"{live_server.url}/evaluation/runs/{run.pk}/")
    run.refresh_from_db()
    assert run.cancelled_at is None and Trial.objects.filter(run=run, status=TrialStatus.QUEUED).count() == queued

    page.click("[data-testid=rerun]")
    expect(page.locator("[data-testid=confirm-step]")).to_contain_text("4 trials queued")
    page.go_back()
    assert Run.objects.count() == 1

    page.click("[data-testid=cancel]")
    page.click("[data-testid=confirm]")
    expect(page.locator(".messages")).to_contain_text("4 queued trial(s) ended")
    run.refresh_from_db()
    assert run.cancelled_at is not None and not Trial.objects.filter(run=run, status=TrialStatus.QUEUED).exists()


@pytest.mark.django_db(transaction=True)
def test_going_back_from_deleting_a_draft_release_keeps_it(live_server, new_page, curator):
    draft = releases.release_create(user=curator, name="bench", version="0.1")
    page = new_page()
    login(page, live_server.url, curator.username)
    page.goto(f"{live_server.url}/candidates/releases/{draft.pk}/")
    page.click("[data-testid=delete-draft]")
    expect(page.locator("[data-testid=confirm-step] h1")).to_have_text("Delete the draft bench 0.1?")
    page.click("[data-testid=go-back]")
    expect(page.locator("[data-testid=release-state]")).to_have_text("draft")
    assert Release.objects.filter(pk=draft.pk).exists()
    page.click("[data-testid=delete-draft]")
    page.click("[data-testid=confirm]")
    expect(page.locator(".messages")).to_contain_text("Deleted the draft bench 0.1")
    assert not Release.objects.filter(pk=draft.pk).exists()
