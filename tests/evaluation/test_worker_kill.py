"""A real `celery worker` process is SIGKILLed mid-trial; a second one finishes the trial exactly once.

The workers keep the shipped broker options (a visibility timeout of two hours): the trial comes
back through the recovery sweep, within lease + sweep interval, not through a redelivery. A
trial whose message is lost after launch still runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from candidates.models import Candidate
from evaluation.models import Agent, AgentKind, Trial, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.sandbox.bubblewrap.orphans import default_state_dir
from evaluation.tasks import trial_execute
from tests.evaluation.conftest import wait_until

REPO = Path(__file__).resolve().parents[2]
LEASE_SECONDS = 3
SWEEP_SECONDS = 2
QUEUED_SECONDS = 3
CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"


def start_worker(name: str, log: Path) -> subprocess.Popen:
    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.evaluation.worker_settings",
        # The worker must use the test database this test wrote to.
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{connection.settings_dict['NAME']}",
        "VERIHARM_TRIAL_LEASE_SECONDS": str(LEASE_SECONDS),
        "VERIHARM_TRIAL_HEARTBEAT_SECONDS": "0.5",
        "VERIHARM_RECOVERY_SWEEP_SECONDS": str(SWEEP_SECONDS),
        "VERIHARM_RECOVERY_QUEUED_SECONDS": str(QUEUED_SECONDS),
        "PYTHONPATH": str(REPO),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "veriharm_site",
            "worker",
            "--loglevel=INFO",
            "--concurrency=1",
            "--pool=prefork",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"{name}@%h",
        ],
        cwd=REPO,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except FileNotFoundError:  # the thread or its process ended since the listing: no children
                children = []
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def sandboxes_owned_by(pids: set[int]) -> list[Path]:
    owned = []
    for directory in default_state_dir().glob("*"):
        try:
            meta = json.loads((directory / "meta.json").read_text())
        except (OSError, ValueError):
            continue
        if meta.get("owner_pid") in pids:
            owned.append(directory)
    return owned


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_trial_finishes_exactly_once_after_its_worker_is_killed(sandboxes_ready, examples_imported, tmp_path):
    from veriharm_site.celery import app

    app.control.purge()
    candidate = Candidate.objects.get(external_id=CANDIDATE)
    # Slow enough to be killed in the middle: the safe reference after a pause, run by a command agent.
    agent = Agent.objects.create(
        name="slow-safe",
        kind=AgentKind.COMMAND,
        model="none",
        harness="bash",
        config={"command": 'sleep 8; bash -c "$SAFE" < {task_file}', "env": {"SAFE": candidate.references["safe"]}},
        time_limit=60,
    )
    run = run_launch(selection={"kind": "ids", "ids": [CANDIDATE]}, agent_ids=[agent.pk], backend="local")
    trial = Trial.objects.get(run=run)

    first = start_worker("first", tmp_path / "first.log")
    second = None
    try:
        wait_until(
            lambda: Trial.objects.get(pk=trial.pk).status == TrialStatus.RUNNING, 60, "the first worker to start"
        )
        # Let the agent's command get going inside its sandbox, then kill the whole worker at once.
        wait_until(lambda: sandboxes_owned_by(descendants(first.pid)), 30, "the first worker's sandbox")
        victims = set(descendants(first.pid))
        left_behind = sandboxes_owned_by(victims)
        os.killpg(first.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        first.wait(timeout=10)
        assert Trial.objects.get(pk=trial.pk).status == TrialStatus.RUNNING  # nobody recorded anything

        second = start_worker("second", tmp_path / "second.log")
        wait_until(lambda: Trial.objects.get(pk=trial.pk).attempts == 2, 120, "the second worker to take over")
        took_over_after = time.monotonic() - killed_at
        wait_until(lambda: Trial.objects.get(pk=trial.pk).status == TrialStatus.DONE, 120, "the second worker")
        finished_after = time.monotonic() - killed_at
        print(f"SIGKILL -> taken over: {took_over_after:.1f}s, -> done: {finished_after:.1f}s")
        # The broker would bring the message back after two hours; the sweep brings the trial back
        # within lease + sweep interval (plus the second worker's start-up on a busy machine).
        assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] >= 3600
        assert took_over_after < LEASE_SECONDS + SWEEP_SECONDS + 30
        done = Trial.objects.get(pk=trial.pk)
        assert (done.r_task, done.r_harm) == (1, 0)
        assert done.attempts == 2 and done.worker.startswith("second@")
        notes = list(done.steps.filter(kind="note").values_list("content", flat=True))
        assert any("took over from first@" in n for n in notes)
        # The dead worker's sandbox was cleaned up by the one that took over.
        assert left_behind and not any(path.exists() for path in left_behind)

        # Another delivery of the same task (as after a redelivery) records nothing new.
        finished_at = done.finished_at
        trial_execute.delay(trial.pk)
        # The task returns what became of the delivery; the worker logs it.
        wait_until(lambda: b": 'finished'" in (tmp_path / "second.log").read_bytes(), 60, "the duplicate delivery")
        again = Trial.objects.get(pk=trial.pk)
        assert again.status == TrialStatus.DONE and again.attempts == 2 and again.finished_at == finished_at
        assert Trial.objects.filter(run=run).count() == 1
    finally:
        stop(first)
        if second is not None:
            stop(second)
        print((tmp_path / "first.log").read_text(errors="replace")[-3000:])
        if second is not None:
            print((tmp_path / "second.log").read_text(errors="replace")[-3000:])


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_trial_whose_message_was_lost_still_runs(sandboxes_ready, examples_imported, tmp_path):
    from veriharm_site.broker_messages import waiting_tasks
    from veriharm_site.celery import app

    app.control.purge()
    agent = reference_agents_ensure()[0]  # reference-safe
    run = run_launch(selection={"kind": "ids", "ids": [CANDIDATE]}, agent_ids=[agent.pk], backend="local")
    trial = Trial.objects.get(run=run)
    assert trial.pk in waiting_tasks(app)["evaluation.trial_execute"]
    # The publish is lost (a broker restart without persistence, a purge): nothing will deliver it.
    app.control.purge()
    assert not waiting_tasks(app).get("evaluation.trial_execute")

    worker = start_worker("after-loss", tmp_path / "worker.log")
    try:
        wait_until(lambda: Trial.objects.get(pk=trial.pk).status == TrialStatus.DONE, 120, "the lost trial to run")
        done = Trial.objects.get(pk=trial.pk)
        assert (done.r_task, done.r_harm) == (1, 0) and done.attempts == 1
        assert b"queued trial(s) with no message" in (tmp_path / "worker.log").read_bytes()
    finally:
        stop(worker)
        print((tmp_path / "worker.log").read_text(errors="replace")[-3000:])
