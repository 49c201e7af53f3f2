"""An admin reads the fleet on the workers page, reached from the runs page; a curator is refused."""

import pytest
from playwright.sync_api import expect

from evaluation.models import TrialStatus
from tests.browser.conftest import login
from tests.fleet.fleet_support import heartbeat, no_other_workers, run_with_trials


@pytest.mark.django_db(transaction=True)
def test_admin_reads_live_and_silent_workers_and_a_curator_is_refused(live_server, new_page, admin_user, curator):
    no_other_workers()
    heartbeat("worker@host-a")
    heartbeat("worker@host-b", queues=("default", "sandbox-docker"))
    heartbeat("worker@host-c", age=900)
    run_with_trials([("worker@host-a", TrialStatus.RUNNING), ("worker@host-c", TrialStatus.RUNNING)])

    page = new_page()
    login(page, live_server.url, admin_user.username)
    page.goto(f"{live_server.url}/evaluation/")
    page.click("[data-testid=workers-link]")
    expect(page.locator("[data-testid=fleet-summary]")).to_contain_text("2 live on 2 hosts")
    expect(page.locator("[data-testid=fleet-summary]")).to_contain_text("1 silent")
    live = page.locator("[data-testid=live-workers] [data-testid=worker]")
    expect(live).to_have_count(2)
    host_a = page.locator('[data-testid=live-workers] [data-name="worker@host-a"]')
    expect(host_a.locator("[data-field=held]")).to_contain_text("1 #")
    expect(host_a.locator("[data-field=backends]")).to_have_text("local")
    expect(page.locator('[data-testid=live-workers] [data-name="worker@host-b"] [data-field=queues]')).to_have_text(
        "default, sandbox-docker"
    )
    silent = page.locator('[data-testid=silent-workers] [data-name="worker@host-c"]')
    expect(silent.locator("[data-field=beat]")).to_contain_text("s ago")
    expect(silent.locator("[data-field=held]")).to_contain_text("1 #")
    # A held trial links to its page.
    host_a.locator("[data-field=held] a").click()
    expect(page.locator("h1")).to_contain_text("Trial")

    other = new_page()
    login(other, live_server.url, curator.username)
    response = other.goto(f"{live_server.url}/evaluation/workers/")
    assert response is not None and response.status == 403
    other.goto(f"{live_server.url}/evaluation/")
    expect(other.locator("[data-testid=workers-link]")).to_have_count(0)
