"""Executing one trial in a worker: claim it, run the protocol with a heartbeat, record the outcome.

Infrastructure failures (SandboxError, AgentError, anything unexpected) are
retried in place up to VERIHARM_TRIAL_MAX_ATTEMPTS attempts in all, then the
trial is recorded unresolved. A worker that dies mid-trial leaves a running
trial whose heartbeat stops; the next delivery of its task takes it over once
the lease has expired.
"""
from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import connection

from . import services, twins
from .agents.base import AgentError, Step
from .agents.factory import NoReferenceScript, build_runner
from .models import Trial, TrialKind
from .sandbox.base import Environment, Limits, SandboxError
from .trial import TrialCancelled, TrialSpec, trial_run

logger = logging.getLogger(__name__)

# Seconds between two in-place attempts after an infrastructure failure.
RETRY_BACKOFF = 2.0


class Heartbeat:
    """Refreshes a claim's lease from a thread; notices when the lease was lost."""

    def __init__(self, claim: services.Claim, interval: float) -> None:
        self.claim = claim
        self.interval = interval
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-trial-{claim.trial_id}", daemon=True)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    if not services.trial_heartbeat(self.claim):
                        self.lost.set()
                        return
                except Exception:  # a database hiccup must not end the trial; the lease tolerates a missed beat
                    logger.exception("heartbeat of trial %s failed", self.claim.trial_id)
        finally:
            connection.close()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 30)


def _spec(trial: Trial) -> TrialSpec:
    """What the trial runs: the risk task t~ with both tests, or the candidate's capability twin
    in the same environment with its own task test only."""
    candidate = trial.candidate
    instruction, task_test, harm_test = candidate.instruction, candidate.source_task.task_test, candidate.harm_test
    if trial.kind == TrialKind.TWIN:
        twin = twins.twin_task(candidate.twin, candidate.source_task.task_test)
        instruction, task_test, harm_test = twin.instruction, twin.task_test, None
    return TrialSpec(
        environment=candidate.source_task.environment or None,
        instruction=instruction,
        task_test=task_test,
        harm_test=harm_test,
        agent_time_limit=float(min(trial.agent.time_limit, settings.VERIHARM_AGENT_MAX_TIME_LIMIT)),
        test_timeout=float(trial.run.test_timeout),
        limits=Limits(
            memory_mb=settings.VERIHARM_SANDBOX_MEMORY_MB,
            cpus=settings.VERIHARM_SANDBOX_CPUS,
            pids=settings.VERIHARM_SANDBOX_PIDS,
            disk_mb=settings.VERIHARM_SANDBOX_DISK_MB,
        ),
    )


def _step_sink(claim: services.Claim) -> Callable[[Step], None]:
    counter = iter(range(services.trial_steps_next_index(claim), 10**9))
    return lambda step: services.trial_step_add(claim, next(counter), step)


def _attempt(claim: services.Claim, backend_factory: Callable[[str], object]) -> str:
    """One attempt of a claimed trial; returns what became of it."""
    trial = Trial.objects.select_related("run", "agent", "candidate__source_task").get(pk=claim.trial_id)
    try:
        config = trial.agent.config
        if trial.kind == TrialKind.TWIN:
            config = twins.twin_agent_config(trial.agent.kind, config)
        runner = build_runner(
            trial.agent.kind, config, network=trial.agent.network, references=trial.candidate.references or {},
        )
        spec = _spec(trial)
        Environment.from_spec(spec.environment)
    except (NoReferenceScript, ValueError) as exc:
        # A configuration problem: trying again would fail the same way.
        return services.trial_fail(claim, f"cannot start: {exc}", retryable=False)
    with Heartbeat(claim, settings.VERIHARM_TRIAL_HEARTBEAT_SECONDS) as heartbeat:

        def stop_requested() -> bool:
            return heartbeat.lost.is_set() or services.trial_cancel_requested(claim)

        try:
            backend = backend_factory(trial.run.backend)
            if claim.took_over:
                _cleanup_after_dead_worker(backend, claim)
            outcome = trial_run(backend, spec, runner, record=_step_sink(claim), cancelled=stop_requested)
        except TrialCancelled:
            if heartbeat.lost.is_set():
                return "lost"
            services.trial_cancelled(claim)
            return "cancelled"
        except SoftTimeLimitExceeded:
            return services.trial_fail(claim, "the task's time limit was reached", retryable=False)
        except (SandboxError, AgentError) as exc:
            return services.trial_fail(claim, f"{type(exc).__name__}: {exc}", retryable=True)
        except Exception:
            # Unexpected: still infrastructure from the agent's point of view, so bounded retries.
            return services.trial_fail(claim, traceback.format_exc(limit=8), retryable=True)
    return "done" if services.trial_record(claim, outcome) else "lost"


def _cleanup_after_dead_worker(backend, claim: services.Claim) -> None:
    try:
        removed = backend.cleanup_orphans()
        logger.info("trial %s: removed %d sandbox(es) left by a dead worker", claim.trial_id, removed)
    except Exception:
        logger.exception("trial %s: could not clean up after the dead worker", claim.trial_id)


def default_backend_factory(name: str):
    from .sandbox.registry import get_backend

    return get_backend(name)


def trial_execute(trial_id: int, *, worker: str = "", backend_factory: Callable[[str], object] | None = None) -> str:
    """Run a trial to its end unless it is finished, cancelled or held by a live worker.

    Returns "done", "unresolved", "cancelled", "lost", or a ClaimRefused value
    ("missing", "finished", "busy", "exhausted"). Safe to call any number of times.
    """
    factory = backend_factory or default_backend_factory
    while True:
        claim = services.trial_claim(trial_id, worker)
        if isinstance(claim, str):
            return claim
        result = _attempt(claim, factory)
        if result != "requeued":
            return result
        time.sleep(RETRY_BACKOFF)
