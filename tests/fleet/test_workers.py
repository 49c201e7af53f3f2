"""The fleet as admins read it: every worker's host, queues, backends, concurrency, held trials and
last heartbeat, the silent ones apart; a run page says how many hosts its trials ran on."""

from __future__ import annotations

import os

import pytest

from evaluation.fleet.models import WorkerHeartbeat
from evaluation.models import TrialStatus
from tests.evaluation.conftest import wait_until
from tests.fleet.fleet_support import heartbeat, no_other_workers, run_with_trials

RUNNING, DONE = TrialStatus.RUNNING, TrialStatus.DONE


@pytest.mark.django_db
def test_admins_read_live_and_silent_workers_with_the_trials_they_hold(admin_client_):
    no_other_workers()
    heartbeat("worker@host-a")
    heartbeat("worker@host-b", queues=("default", "sandbox-docker"))
    heartbeat("worker@host-c", age=600)  # killed ten minutes ago
    heartbeat("worker@host-d", stopped=True)
    run = run_with_trials([("worker@host-a", RUNNING), ("worker@host-a", RUNNING), ("worker@host-c", RUNNING)])

    body = admin_client_.get("/api/evaluation/workers/").json()

    assert body["hosts"] == 2
    live = {w["name"]: w for w in body["live"]}
    assert set(live) == {"worker@host-a", "worker@host-b"}
    held = sorted(run.trials.filter(worker="worker@host-a").values_list("pk", flat=True))
    assert (live["worker@host-a"]["held"], live["worker@host-a"]["held_ids"]) == (2, held)
    assert live["worker@host-a"]["backends"] == ["local"]
    assert live["worker@host-b"]["queues"] == ["default", "sandbox-docker"]
    assert live["worker@host-b"]["concurrency"] == 2
    [silent] = body["silent"]
    assert (silent["name"], silent["held"], silent["state"]) == ("worker@host-c", 1, "silent")
    assert silent["heartbeat_age"] >= 600
    assert [w["name"] for w in body["stopped"]] == ["worker@host-d"]


@pytest.mark.django_db
def test_other_roles_are_refused_the_workers(annotator_client, curator_client):
    heartbeat("worker@host-a")
    before = list(WorkerHeartbeat.objects.values_list("name", "beat_at", "stopped_at"))
    for client in (annotator_client, curator_client):
        assert client.get("/api/evaluation/workers/").status_code == 403
        assert client.get("/evaluation/workers/").status_code == 403
    assert list(WorkerHeartbeat.objects.values_list("name", "beat_at", "stopped_at")) == before


@pytest.mark.django_db
def test_the_run_page_says_how_many_hosts_its_trials_ran_on(curator_client):
    run = run_with_trials([("worker@host-a", DONE), ("worker@host-b", DONE), ("other@host-b", DONE), ("", "queued")])
    page = curator_client.get(f"/evaluation/runs/{run.pk}/").content.decode()
    assert 'title="host-a, host-b">On <b>2</b> hosts' in page


def test_a_real_worker_writes_its_heartbeat(celery_worker_thread, admin_client_):
    """The worker the tests start, as any worker: it appears on its own, with what it consumes."""
    mine = WorkerHeartbeat.objects.filter(pid=os.getpid())  # the worker runs in this process
    wait_until(mine.exists, 30, "the worker's first heartbeat")
    [worker] = [w for w in admin_client_.get("/api/evaluation/workers/").json()["live"] if w["name"] == mine.get().name]
    assert worker["host"] and worker["name"].endswith("@" + worker["host"])
    assert {"default", "sandbox-local", "sandbox-docker"} <= set(worker["queues"])
    assert worker["backends"] == ["docker", "local"]
    assert worker["concurrency"] == 1


@pytest.mark.django_db(transaction=True)
def test_a_stopped_worker_says_so_and_beats_no_more():
    """Test workers leave through Celery's cold shutdown (`terminate`), as a worker's second Ctrl-C
    does: the heartbeat and sweep threads end with it and its row shows it stopped."""
    import threading

    from celery.contrib.testing.worker import start_worker

    from veriharm_site.celery import app

    with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30) as worker:
        wait_until(WorkerHeartbeat.objects.filter(name=worker.hostname).exists, 30, "the worker's first heartbeat")
    names = {t.name for t in threading.enumerate()}
    assert not names & {"veriharm-worker-heartbeat", "veriharm-recovery-sweep"}
    assert WorkerHeartbeat.objects.get(name=worker.hostname).stopped_at is not None
