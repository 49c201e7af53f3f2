"""Trials and generation searches that meet a sandbox system still being built wait for it without
spending attempts; a system that failed to build still ends them as infrastructure failures."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import IO

import pytest
from django.utils import timezone

from demo.runs import demo_agents_ensure
from evaluation.agents.sandbox_status import sandbox_status
from evaluation.generation import engine
from evaluation.generation.launch import generation_launch
from evaluation.generation.states import SearchStatus
from evaluation.models import Trial, TrialStatus
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.runs.refusals import LaunchRefused
from evaluation.sandbox import images
from evaluation.sandbox.base import ExecResult
from evaluation.trials import execution
from evaluation.trials.leases import AttemptResult
from evaluation.trials.recovery import trials_needing_a_message
from tests.evaluation.conftest import mini_swe_agent_create, wait_until
from tests.evaluation.fake_sandbox import FakeBackend, ok
from tests.sandbox_fakes import harness_built, sandbox_built

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
HARNESS = "mini-swe-agent"


@dataclass
class Build:
    """A sandbox system under construction in a temporary directory, as `make run` leaves it."""

    root: Path
    lock: IO[str] | None = None

    def start(self) -> None:
        self.root.parent.joinpath("state").write_text("building\n")
        self.lock = open(self.root.parent / images.BUILD_LOCK, "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)

    def stop(self, state: str) -> None:
        if self.lock is not None:
            self.lock.close()
            self.lock = None
        self.root.parent.joinpath("state").write_text(f"{state}\n")


@pytest.fixture
def build(tmp_path: Path, monkeypatch, settings) -> Iterator[Build]:
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("VERIHARM_SANDBOX_ROOT", str(cache / "sandbox-root"))
    for name in ("VERIHARM_VERIFIER_ROOT", "VERIHARM_HARNESS_ROOT"):
        monkeypatch.delenv(name, raising=False)
    settings.VERIHARM_SANDBOX_BUILD_STATE = str(cache / "state")
    settings.VERIHARM_SANDBOX_BUILD_LOG = str(cache / "log")
    made = Build(cache / "sandbox-root")
    yield made
    made.stop("failed")


def _verdicts(sandbox, command: str) -> ExecResult:
    return ok("1 passed")


def _safe_trial(examples_imported) -> Trial:
    agent = reference_agents_ensure()[0]
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
    return run.trials.get()


def _queued_untouched(trial: Trial) -> bool:
    trial.refresh_from_db()
    return (trial.status, trial.attempts, trial.error, trial.end, trial.lease_token, trial.started_at) == (
        TrialStatus.QUEUED,
        0,
        "",
        "",
        "",
        None,
    )


def _untouched(trial: Trial) -> None:
    trial.refresh_from_db()
    assert (trial.status, trial.attempts, trial.error, trial.end, trial.lease_token) == (
        TrialStatus.QUEUED,
        0,
        "",
        "",
        "",
    )
    assert trial.started_at is None and not trial.steps.exists()


@pytest.mark.django_db
def test_a_trial_claimed_while_the_system_is_built_spends_no_attempt_and_runs_once_it_is_ready(
    examples_imported, build
):
    trial = _safe_trial(examples_imported)
    made = []

    def backend(name: str) -> FakeBackend:
        made.append(name)
        return FakeBackend(_verdicts)

    build.start()
    # More deliveries than the attempts a trial has: none of them is spent.
    for _ in range(4):
        # Waiting for an hour already, as far as the recovery sweep can tell...
        Trial.objects.filter(pk=trial.pk).update(queued_at=timezone.now() - timedelta(hours=1))
        assert trials_needing_a_message(set()) == ([], [trial.pk])
        assert execution.trial_execute(trial.pk, backend_factory=backend) == AttemptResult.WAITING
        _untouched(trial)
        # ...but queued anew by each look: a trial whose task keeps coming back is not lost (the sweep
        # cannot see the task's delayed retry, and would publish it again at every sweep).
        assert trials_needing_a_message(set()) == ([], [])
    assert not made  # no sandbox was asked for
    sandbox_built()
    build.stop("ready")
    assert execution.trial_execute(trial.pk, backend_factory=backend) == AttemptResult.DONE
    trial.refresh_from_db()
    assert (trial.status, trial.attempts, trial.end) == (TrialStatus.DONE, 1, TrialEnd.VERDICT) and made == ["local"]


@pytest.mark.django_db
def test_a_build_that_starts_under_a_running_attempt_is_waited_for_too(examples_imported, build):
    """The look before the attempt found no build (a system missing); the backend then found the tree
    gone because a build had just started: the attempt is given back, not counted as a failure."""
    trial = _safe_trial(examples_imported)

    def backend(name: str) -> FakeBackend:
        build.start()
        images.require_root_tree()  # raises: the tree is not there yet
        raise AssertionError("unreachable")

    assert execution.trial_execute(trial.pk, backend_factory=backend) == AttemptResult.WAITING
    _untouched(trial)


@pytest.mark.django_db
def test_a_failed_build_still_ends_the_trial_as_an_infrastructure_failure_after_its_attempts(
    examples_imported, build, settings
):
    settings.VERIHARM_TRIAL_MAX_ATTEMPTS = 3
    build.stop("failed")
    assert sandbox_status().state == "failed" and not sandbox_status().waits
    trial = _safe_trial(examples_imported)
    assert execution.trial_execute(trial.pk, backend_factory=lambda name: images.require_root_tree()) == "unresolved"
    trial.refresh_from_db()
    assert (trial.status, trial.end, trial.attempts) == (TrialStatus.UNRESOLVED, TrialEnd.INFRASTRUCTURE, 3)
    assert trial.error.count(f"SandboxError: sandbox root tree {build.root} is missing or incomplete") == 3
    assert trial.error.count("; build it with scripts/build_sandbox_image.sh") == 3


@pytest.mark.django_db
def test_a_harness_trial_waits_for_its_runtime_while_the_base_system_serves_other_agents(
    examples_imported, build, settings
):
    sandbox_built()
    build.start()  # the build is on to the harness runtimes
    assert sandbox_status().ready and sandbox_status([HARNESS]).state == "building"
    harness = mini_swe_agent_create("harness-waits", "http://127.0.0.1:9/v1", "VERIHARM_AGENT_KEY_READINESS")
    safe = reference_agents_ensure()[0]

    # A launch waits for what its agents need: the harness agent's is refused, the reference agent's is not.
    settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = True
    with pytest.raises(LaunchRefused, match="being built"):
        run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[harness.pk], backend="local")
    assert not Trial.objects.exists()
    settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = False
    run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[harness.pk, safe.pk], backend="local")

    trials = {t.agent.name: t for t in run.trials.select_related("agent")}
    backend = lambda name: FakeBackend(_verdicts)  # noqa: E731
    assert execution.trial_execute(trials["harness-waits"].pk, backend_factory=backend) == AttemptResult.WAITING
    _untouched(trials["harness-waits"])
    assert execution.trial_execute(trials["reference-safe"].pk, backend_factory=backend) == AttemptResult.DONE
    harness_built(HARNESS)
    build.stop("ready")
    assert sandbox_status([HARNESS]).ready


@pytest.mark.django_db
def test_a_search_claimed_while_the_system_is_built_counts_no_failure(build):
    sandbox_built()  # launched once the base was ready...
    run = generation_launch(
        name="waits for the build",
        selection={"kind": "ids", "ids": ["bashbench-489407"]},
        agent_ids=[next(a.pk for a in demo_agents_ensure() if a.name == "demo-reckless")],
        proposers=[{"kind": "scripted"}],
        judges=[{"kind": "scripted", "temperament": "strict"}, {"kind": "scripted", "temperament": "lenient"}],
        budget=1,
        backend="local",
    )
    search = run.searches.get()
    images.verifier_root().joinpath(images.VERIFIER_IDENTITY).unlink()  # ...then a rebuild of the verifier began
    build.start()

    def backend(name: str):
        raise AssertionError("no sandbox while the system is being built")

    for _ in range(4):
        assert engine.search_execute(search.pk, backend_factory=backend) == engine.WAITING
        search.refresh_from_db()
        assert (search.status, search.failures, search.error, search.lease_token) == (SearchStatus.QUEUED, 0, "", "")
        assert not search.steps.exists()


@pytest.mark.django_db(transaction=True)
def test_the_worker_comes_back_to_a_waiting_trial_and_runs_it_once_the_build_is_done(
    examples_imported, build, celery_worker_thread, monkeypatch
):
    from veriharm_site.leased_work import retries

    monkeypatch.setattr(execution, "default_backend_factory", lambda name: FakeBackend(_verdicts))
    # Looks seconds apart as shipped (veriharm_site.backoff.SYSTEM_BUILD_POLL); a fraction of one here.
    monkeypatch.setattr(retries, "system_build_poll_delay", lambda look: 0.2)
    looks: list[bool] = []
    original = execution._system_being_built

    def look(trial: Trial) -> bool:
        looks.append(original(trial))
        return looks[-1]

    monkeypatch.setattr(execution, "_system_being_built", look)
    build.start()
    trial = _safe_trial(examples_imported)
    # The task is delivered again and again (each time the claim is given back) while the build runs.
    # Read between two looks: during one the trial is claimed for a moment (running, its attempt
    # counted) until the worker gives the claim back. An attempt spent on waiting would stay counted
    # in the queued trial, and this wait would time out.
    wait_until(
        lambda: len(looks) >= 3 and _queued_untouched(trial), 30, "the trial queued again, untouched, after three looks"
    )
    sandbox_built()
    build.stop("ready")
    wait_until(lambda: Trial.objects.get(pk=trial.pk).status == TrialStatus.DONE, 30, "the trial to run")
    assert Trial.objects.get(pk=trial.pk).attempts == 1 and looks[-1] is False
