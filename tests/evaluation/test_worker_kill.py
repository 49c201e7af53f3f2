"""A real `celery worker` process is SIGKILLed mid-trial; a second one finishes the trial exactly once.

The workers keep the shipped broker options (a visibility timeout of two hours): the trial comes
back through the recovery sweep, within lease + sweep interval, not through a redelivery. A
trial whose message is lost after launch still runs. A worker stopped normally (SIGTERM) leaves
none of its sandboxes behind, its warm pools' included.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker
import pytest
from django.conf import settings
from django.db import connection

from candidates.models import Candidate
from evaluation.models import Agent, AgentKind, Trial, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.sandbox.base import SANDBOX_LABEL
from evaluation.sandbox.bubblewrap.orphans import cleanup_orphans, default_state_dir
from evaluation.sandbox.docker.orphans import cleanup_orphans as docker_cleanup_orphans
from evaluation.tasks import trial_execute
from tests.evaluation.conftest import wait_until

REPO = Path(__file__).resolve().parents[2]
LEASE_SECONDS = 3
SWEEP_SECONDS = 2
QUEUED_SECONDS = 3
CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"


def start_worker(name: str, log: Path, **extra_env: str) -> subprocess.Popen:
    db = settings.DATABASES["default"]
    env = {
        **os.environ,
        **extra_env,
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


def sandboxes_owned_by(pids: set[int], state_dir: Path | None = None) -> list[Path]:
    owned = []
    for directory in (state_dir or default_state_dir()).glob("*"):
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


def containers_owned_by(pids: set[int]) -> list[str]:
    client = docker.from_env()
    try:
        return [
            c.name
            for c in client.containers.list(all=True, filters={"label": f"{SANDBOX_LABEL}=1"})
            if int(c.labels.get("veriharm.owner_pid", "0")) in pids
        ]
    finally:
        client.close()


def mount_points() -> set[str]:
    return {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_stopped_normally_leaves_none_of_its_sandboxes(sandboxes_ready, examples_imported, tmp_path):
    """SIGTERM, as a service manager stops a worker: Celery's warm shutdown, exit 0. Its pool process
    leaves through os._exit, so what its warm pools hold must go on the worker's own shutdown."""
    from veriharm_site.celery import app

    app.control.purge()
    agent = reference_agents_ensure()[0]  # reference-safe
    runs = [
        run_launch(selection={"kind": "ids", "ids": [CANDIDATE]}, agent_ids=[agent.pk], backend=backend)
        for backend in ("local", "docker")
    ]
    # Its own temporary directory, so no other worker on this machine sweeps what it leaves; the
    # sandbox users must reach it.
    scratch = Path(tempfile.mkdtemp(prefix="veriharm-stop-"))
    scratch.chmod(0o755)
    state_dir = scratch / "veriharm-sandboxes"
    worker = start_worker("stopped", tmp_path / "worker.log", TMPDIR=str(scratch))
    pids: set[int] = set()
    try:
        wait_until(lambda: Trial.objects.filter(run__in=runs, status=TrialStatus.DONE).count() == 2, 180, "both trials")
        # The pools refill after each trial: an agent sandbox and two test-phase shells per backend.
        wait_until(
            lambda: (
                len(sandboxes_owned_by(descendants(worker.pid), state_dir)) >= 3
                and len(containers_owned_by(descendants(worker.pid))) >= 3
            ),
            120,
            "the warm pools",
        )
        pids = descendants(worker.pid) | {worker.pid}
        pooled = sandboxes_owned_by(pids, state_dir)
        records = [json.loads((d / "meta.json").read_text()) for d in pooled]
        cgroups = [Path(c) for r in records for c in (r.get("cgroups") or {}).values()]
        mounts = {m for m in mount_points() if any(m.startswith(f"{d}/") for d in pooled)}
        assert mounts  # each pooled sandbox's writable tmpfs

        os.kill(worker.pid, signal.SIGTERM)
        assert worker.wait(timeout=120) == 0

        # Nothing of its own is left: no sandbox directory, tmpfs mount, cgroup or container.
        left = (
            [d for d in pooled if d.exists()] + sandboxes_owned_by(pids, state_dir),
            mounts & mount_points(),
            [c for c in cgroups if c.exists()],
            containers_owned_by(pids),
        )
        assert left == ([], set(), [], [])
    finally:
        stop(worker)
        # What a failed run left: its owner is gone, so the orphan sweeps remove it.
        cleanup_orphans(state_dir)
        client = docker.from_env()
        docker_cleanup_orphans(client, scratch / "veriharm-docker-snapshots")
        client.close()
        shutil.rmtree(scratch, ignore_errors=True)
        print((tmp_path / "worker.log").read_text(errors="replace")[-3000:])
