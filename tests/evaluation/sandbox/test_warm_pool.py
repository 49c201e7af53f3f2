"""Warm pools on both backends: each member used once, fresh, bounded, and never left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator

import docker.errors
import pytest

from evaluation.agents.reference import ReferenceAgent
from evaluation.sandbox import Environment, Sandbox, SandboxBackend
from evaluation.sandbox.bubblewrap import LocalSandbox
from evaluation.sandbox.docker import DockerSandbox
from evaluation.sandbox.registry import get_backend
from evaluation.trials.protocol import TrialSpec, trial_run

BACKENDS = ("local", "docker")

ENVIRONMENT = Environment(workdir="/app", files={"given.txt": "from the task"})


@pytest.fixture(params=BACKENDS)
def pooled(request: pytest.FixtureRequest, sandbox_base: None) -> Iterator[SandboxBackend]:
    backend = get_backend(request.param, pool_size=1, pool_environments=1)
    yield backend
    backend.drain_pools()  # type: ignore[attr-defined]


def on_host(sandbox: Sandbox) -> bool:
    if isinstance(sandbox, LocalSandbox):
        return sandbox.directory.exists()
    assert isinstance(sandbox, DockerSandbox)
    try:
        sandbox.backend.client.containers.get(sandbox.id)
        return True
    except docker.errors.NotFound:
        return False


def where(sandbox: Sandbox) -> str:
    return str(sandbox.directory) if isinstance(sandbox, LocalSandbox) else sandbox.id  # type: ignore[union-attr]


def warm(backend: SandboxBackend, environment: Environment = ENVIRONMENT) -> None:
    assert backend.wait_warm(environment, timeout=120), "the pool did not fill"  # type: ignore[attr-defined]


def test_a_pooled_sandbox_is_handed_out_once_and_carries_nothing_over(pooled: SandboxBackend) -> None:
    warm(pooled)
    ready = {where(s) for s in pooled.pooled()}  # type: ignore[attr-defined]
    first = pooled.create(ENVIRONMENT)
    assert where(first) in ready  # taken from the pool...
    assert where(first) not in {where(s) for s in pooled.pooled()}  # ...and out of it for good
    result = first.exec("echo left > /tmp/left; echo left > /etc/left; echo left > left; pwd", 30)
    assert result.stdout == "/app\n", result
    first.destroy()
    assert not on_host(first)

    warm(pooled)
    second = pooled.create(ENVIRONMENT)
    try:
        assert where(second) != where(first)
        seen = second.exec("ls /tmp/left /etc/left /app/left 2>&1; cat given.txt", 30).stdout
        assert seen.count("No such file") == 3 and seen.endswith("from the task")
    finally:
        second.destroy()


TASK_TEST = (
    "import pathlib\n"
    "def test_task():\n"
    "    assert pathlib.Path('done.txt').read_text() == 'yes'\n"
    "    assert not pathlib.Path('/tmp/from_a_test').exists()\n"
    "    pathlib.Path('/tmp/from_a_test').write_text('x')\n"
)
HARM_TEST = "import pathlib\ndef test_harm():\n    assert pathlib.Path('/app/harm.txt').exists()\n"


def test_trials_on_a_warm_pool_keep_their_verdicts_and_leave_only_the_pool(pooled: SandboxBackend) -> None:
    spec = TrialSpec(
        environment={"workdir": "/app"},
        instruction="",
        task_test=TASK_TEST,
        harm_test=HARM_TEST,
        agent_time_limit=60,
        test_timeout=60,
    )
    outcomes = []
    for script in ("echo -n yes > done.txt", "echo -n yes > done.txt; touch harm.txt", "true"):
        warm(pooled, Environment(workdir="/app"))
        before = {where(s) for s in pooled.pooled()}  # type: ignore[attr-defined]
        outcomes.append(trial_run(pooled, spec, ReferenceAgent(script), record=lambda step: None))
        # What the trial took is gone; what the pool holds now was built after it, never reused.
        assert before.isdisjoint(where(s) for s in pooled.pooled())  # type: ignore[attr-defined]
    # Each test ran on its own copy: the task test's file never reached the next trial's copies.
    assert [(o.r_task, o.r_harm) for o in outcomes] == [(1, 0), (1, 1), (0, 0)]


def test_the_pool_is_bounded_and_forgets_the_least_recent_environment(pooled: SandboxBackend) -> None:
    warm(pooled)
    old = pooled.pooled()  # type: ignore[attr-defined]
    assert len(old) == 3  # one agent sandbox, two test-phase copies
    other = Environment(workdir="/workspace")
    warm(pooled, other)
    now = pooled.pooled()  # type: ignore[attr-defined]
    assert len(now) == 3 and all(s.workdir == "/workspace" for s in now)
    assert not any(on_host(s) for s in old)
    pooled.drain_pools()  # type: ignore[attr-defined]
    assert pooled.pooled() == [] and not any(on_host(s) for s in now)  # type: ignore[attr-defined]


_POOL_OWNER = """
import json, time
from evaluation.sandbox import Environment
from evaluation.sandbox.registry import get_backend
backend = get_backend({name!r}, pool_size=1)
assert backend.wait_warm(Environment(workdir="/app"), timeout=120)
members = [str(s.directory) if {name!r} == "local" else s.id for s in backend.pooled()]
print(json.dumps(members), flush=True)
time.sleep(600)   # killed while this runs
"""


def test_pool_members_are_live_while_their_worker_lives_and_orphans_once_it_is_killed(
    pooled: SandboxBackend, python_process: Callable[[str], subprocess.Popen[str]]
) -> None:
    owner = python_process(_POOL_OWNER.format(name=pooled.name))
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, owner.stderr.read() if owner.stderr else "no output"
        members = json.loads(line)
        assert len(members) == 3
        # The sweep (evaluation.trials.recovery.orphans_remove) of another live process leaves them alone...
        get_backend(pooled.name).cleanup_orphans()
        assert all(exists(pooled, m) for m in members)
        # ...and so does one in the owning process itself, for its own pool.
        warm(pooled)
        mine = pooled.pooled()  # type: ignore[attr-defined]
        pooled.cleanup_orphans()
        assert all(on_host(s) for s in mine)
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    assert all(exists(pooled, m) for m in members)
    assert get_backend(pooled.name).cleanup_orphans() >= 3
    assert not any(exists(pooled, m) for m in members)


def exists(backend: SandboxBackend, member: str) -> bool:
    if backend.name == "local":
        return os.path.exists(member)
    try:
        backend.client.containers.get(member)  # type: ignore[attr-defined]
        return True
    except docker.errors.NotFound:
        return False
