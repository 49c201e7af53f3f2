"""Running a search in a worker: claim it, then do the step its record still lacks and record it,
until the search ends (Algorithm 1, Stage 1 then Stage 2, one tuple).

The worker holds the search through a lease with a heartbeat. A worker that dies mid-step leaves
the step unrecorded; the next delivery of the task (the recovery sweep publishes it once the lease
has expired) takes the search over and does that step again, and only that step. Failures of the
sandbox or the agent harness are retried in place, each after a longer wait (`veriharm_site.backoff`),
up to VERIHARM_TRIAL_MAX_ATTEMPTS failures of the search, then it ends as an infrastructure failure.

A search that finds the sandbox system its target agent needs (`agents.sandbox_status`, for the
target's harness runtimes) still being built, when taken or when a step meets a SandboxError, counts
no failure: it gives its claim back (`leases.search_release`) and its task looks again later (WAITING).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from typing import Any

from django.conf import settings

from evaluation.agents.base import AgentError
from evaluation.agents.factory import pin_runtimes
from evaluation.agents.pinning import PinTampered
from evaluation.agents.sandbox_status import sandbox_status
from evaluation.sandbox.base import SandboxBackend, SandboxError
from evaluation.trials.protocol import TrialCancelled
from evaluation.trials.sandboxes import default_backend_factory
from veriharm_site.backoff import infrastructure_retry_delay
from veriharm_site.leased_work.retries import WAITING

from . import decision, steps
from .leases import Claim, ClaimRefused, Heartbeat, search_claim, search_heartbeat, search_release
from .models import GenerationRun, GenerationSearch, GenerationStep
from .recording import next_of, search_finish, step_failed, step_record
from .states import StepKind
from .targets import target_pin

__all__ = ["WAITING", "ClaimRefused", "search_execute"]

logger = logging.getLogger(__name__)

# `search_execute` returns the core's WAITING when the sandbox system is being built: the task
# comes back later (`veriharm_site.leased_work.retries`).


def _do(
    search: GenerationSearch,
    todo: decision.Next,
    recorded: list[GenerationStep],
    backend: Callable[[], SandboxBackend],
    cancelled: Callable[[], bool],
) -> dict[str, Any]:
    def step(kind: str, iteration: int) -> GenerationStep:
        return next(s for s in recorded if s.kind == kind and s.iteration == iteration)

    if todo.kind == StepKind.SEED:
        return steps.seed_rollout(search, backend(), cancelled)
    if todo.kind == StepKind.PROPOSAL:
        return steps.propose(search, todo.iteration, recorded)
    if todo.kind == StepKind.NOOP_CHECK:
        return steps.noop_check(search, step(StepKind.PROPOSAL, todo.iteration), backend(), cancelled)
    if todo.kind == StepKind.ROLLOUT:
        return steps.rollout(search, step(StepKind.PROPOSAL, todo.iteration), backend(), cancelled)
    kept = next(
        s for s in recorded if s.kind == StepKind.ROLLOUT and s.r_task == 1 and s.r_harm == 1 and s.iteration > 0
    )
    return steps.judge(search, todo.judge, step(StepKind.PROPOSAL, kept.iteration))


def _cleanup_after_dead_worker(backend: SandboxBackend, claim: Claim) -> None:
    try:
        backend.cleanup_orphans()
    except Exception:
        logger.exception("search %s: could not clean up after the dead worker", claim.search_id)


def search_execute(
    search_id: int,
    *,
    worker: str = "",
    abandoned: str = "",
    backend_factory: Callable[[str], SandboxBackend] | None = None,
) -> str:
    """Run a search to its end unless it has ended or a live worker holds it; returns how this
    delivery ended ("finished", "lost", or a ClaimRefused value). Safe to call any number of times."""
    claim = search_claim(search_id, worker, abandoned=abandoned)
    if isinstance(claim, ClaimRefused):
        return claim.value
    factory = backend_factory or default_backend_factory
    run_id, backend_name = GenerationSearch.objects.filter(pk=search_id).values_list("run_id", "run__backend").get()
    runtimes = pin_runtimes(target_pin(GenerationSearch.objects.select_related("agent").get(pk=search_id)))

    def being_built() -> bool:
        return sandbox_status(runtimes).waits

    if being_built():
        return WAITING if search_release(claim) else "lost"
    cleaned = not claim.took_over

    def backend() -> SandboxBackend:
        nonlocal cleaned
        made = factory(backend_name)
        if not cleaned:
            _cleanup_after_dead_worker(made, claim)
            cleaned = True
        return made

    with Heartbeat(claim, settings.VERIHARM_TRIAL_HEARTBEAT_SECONDS) as heartbeat:

        def cancelled() -> bool:
            return (
                heartbeat.lost.is_set() or GenerationRun.objects.filter(pk=run_id, cancelled_at__isnull=False).exists()
            )

        while True:
            if heartbeat.lost.is_set():
                return "lost"
            search = GenerationSearch.objects.select_related("run", "agent").get(pk=search_id)
            recorded = list(search.steps.all())
            todo = next_of(search, recorded)
            if todo.kind == decision.FINISH:
                return "finished" if search_finish(claim, todo) else "lost"
            try:
                fields = _do(search, todo, recorded, backend, cancelled)
            except TrialCancelled:
                continue  # the record now decides: cancelled, or the lease was lost
            except PinTampered as exc:
                # The target's pin no longer matches its hash, as a trial's would be refused: every
                # attempt would meet the same pin.
                retry = step_failed(claim, f"{todo.kind} {todo.iteration}: cannot start: {exc}", retryable=False)
            except SandboxError as exc:
                if being_built():
                    # A build started (or ran into its last part) since the look above: no failure.
                    return WAITING if search_release(claim) else "lost"
                retry = step_failed(claim, f"{todo.kind} {todo.iteration or todo.judge}: {type(exc).__name__}: {exc}")
            except AgentError as exc:
                retry = step_failed(claim, f"{todo.kind} {todo.iteration or todo.judge}: {type(exc).__name__}: {exc}")
            except Exception:
                # Unexpected: the proposer's or judge's own failures come back as results, so this is
                # infrastructure too, retried a bounded number of times.
                retry = step_failed(claim, f"{todo.kind}: {traceback.format_exc(limit=6)}")
            else:
                # Not recorded: the lease is gone, or the record now decides otherwise (a cancel came
                # in while the step ran); the loop asks the record again.
                if not step_record(claim, todo, fields) and not search_heartbeat(claim):
                    return "lost"
                continue
            if not retry:
                return "finished"
            failures = GenerationSearch.objects.filter(pk=search_id).values_list("failures", flat=True).get()
            time.sleep(infrastructure_retry_delay(failures))
