"""Executing one trial in a worker: claim it, run the protocol with a heartbeat, record the outcome.

Failures before a verdict (SandboxError, AgentError, anything unexpected) are
retried in place up to VERIHARM_TRIAL_MAX_ATTEMPTS attempts in all, each after a
longer wait (`veriharm_site.backoff`: exponential, capped, with jitter), then the
trial is recorded unresolved, as an agent error or an infrastructure failure
(`evaluation.models.taxonomy`); a verifier whose start-of-run audit failed (VerifierAuditFailed)
is an infrastructure failure at once, as another attempt would find the same system. The trial runs its pinned inputs and agent only, after
checking their hashes, and its final state is kept for re-scoring. A worker that dies mid-trial leaves a running
trial whose heartbeat stops; the next delivery of its task takes it over once
the lease has expired.

A trial taken while the sandbox system it needs (`agents.sandbox_status`, for its agent's harness
runtimes) is still being built spends no attempt: the claim is given back (`leases.trial_wait`)
and the task looks again later (WAITING). Only a system that failed to build or is missing lets
the attempt run into the backend's own check, an infrastructure failure once the retries are spent.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

from evaluation.agents.base import AgentError, AgentRunner, Step
from evaluation.agents.factory import NoReferenceScript, agent_models, model_upstream, pin_runtimes
from evaluation.agents.pinning import PinTampered, pinned_runner
from evaluation.agents.sandbox_status import sandbox_status
from evaluation.gateway import BudgetExhausted, Upstream
from evaluation.models import Trial
from evaluation.models.taxonomy import TrialEnd
from evaluation.sandbox.base import Environment, SandboxBackend, SandboxError, VerifierAuditFailed
from evaluation.trials import budget, final_states, leases, pinning
from evaluation.trials.model_access import gateway_for_trial
from evaluation.trials.protocol import TrialCancelled, TrialOutcome, TrialSpec, trial_run
from evaluation.trials.sandboxes import default_backend_factory, sandbox_limits
from veriharm_site.backoff import infrastructure_retry_delay
from veriharm_site.leased_work.heartbeat import LeaseHeartbeat
from veriharm_site.leased_work.retries import LeaseInterrupted

logger = logging.getLogger(__name__)


class AttemptInterrupted(LeaseInterrupted):
    """An attempt lost the database (a PostgreSQL restart) and ended without releasing its lease.

    The trial stays running under `token`, which nothing heartbeats any more; the task's retry
    passes the token back to `trial_claim`, which takes the trial back at once instead of
    refusing it as busy until the lease expires."""

    def __init__(self, trial_id: int, token: str) -> None:
        super().__init__(f"trial {trial_id}: the attempt lost its database connection", token)
        self.trial_id = trial_id


class Heartbeat(LeaseHeartbeat):
    """Refreshes a trial claim's lease from a thread; notices when the lease was lost."""

    def __init__(self, claim: leases.Claim, interval: float) -> None:
        super().__init__(lambda: leases.trial_heartbeat(claim), f"trial {claim.trial_id}", interval)
        self.claim = claim


def _spec(trial: Trial) -> TrialSpec:
    """What the trial runs: its pinned inputs, checked against their hashes first (a risk task t~
    with both tests, or a capability twin with its task test alone)."""
    if trial.inputs is None:
        raise ValueError("this trial was queued before inputs were pinned; launch it again")
    parts = pinning.inputs_verified(trial.inputs)
    return TrialSpec(
        environment=dict(parts.environment) or None,
        instruction=parts.instruction,
        task_test=parts.task_test,
        harm_test=parts.harm_test,
        agent_time_limit=float(
            min(
                int(trial.agent_config.get("time_limit", trial.agent.time_limit)),
                settings.VERIHARM_AGENT_MAX_TIME_LIMIT,
            )
        ),
        test_timeout=float(trial.run.test_timeout),
        limits=sandbox_limits(),
    )


def _runner(trial: Trial) -> AgentRunner:
    """The agent exactly as pinned at launch."""
    return pinned_runner(trial.agent_config, trial.agent_config_sha256)


def _step_sink(claim: leases.Claim) -> Callable[[Step], None]:
    counter = iter(range(leases.trial_steps_next_index(claim), 10**9))
    return lambda step: leases.trial_step_add(claim, next(counter), step)


def _attempt(claim: leases.Claim, backend_factory: Callable[[str], SandboxBackend]) -> leases.AttemptResult:
    """One attempt of a claimed trial; returns what became of it."""
    trial = Trial.objects.select_related("run", "agent", "inputs").get(pk=claim.trial_id)
    try:
        spec = _spec(trial)
        environment = Environment.from_spec(spec.environment)
    except ValueError as exc:  # inputs missing, tampered with, or an environment no sandbox can build
        return leases.trial_fail(claim, f"cannot start: {exc}", retryable=False)
    try:
        runner = _runner(trial)
        upstream: Upstream | None = model_upstream(trial.agent_config["kind"], trial.agent_config["config"])
    except PinTampered as exc:
        return leases.trial_fail(claim, f"cannot start: {exc}", retryable=False)
    except (NoReferenceScript, ValueError) as exc:
        # The agent's configuration: trying again would fail the same way.
        return leases.trial_fail(claim, f"cannot start the agent: {exc}", retryable=False, end=TrialEnd.AGENT_ERROR)
    if _system_being_built(trial):
        return leases.trial_wait(claim)
    if upstream is not None and budget.run_budget_spent(trial.run):
        # Not the agent's doing, nor the infrastructure's: the run may spend nothing more.
        return leases.trial_fail(
            claim,
            f"not started: the run's model budget of ${trial.run.budget_usd} is spent",
            retryable=False,
            end=TrialEnd.BUDGET,
        )
    archive = final_states.scratch_path(trial.pk) if final_states.keeping() else None
    try:
        with Heartbeat(claim, settings.VERIHARM_TRIAL_HEARTBEAT_SECONDS) as heartbeat:

            def stop_requested() -> bool:
                return heartbeat.lost.is_set() or leases.trial_cancel_requested(claim)

            gateway = (
                gateway_for_trial(
                    claim.trial_id,
                    upstream,
                    attempt=claim.attempt,
                    models=agent_models(trial.agent_config["kind"], trial.agent_config["config"]),
                )
                if upstream is not None
                else nullcontext(None)
            )
            gw = None
            try:
                with gateway as gw:
                    if gw is not None:
                        runner.attach_gateway(gw)
                    backend = backend_factory(trial.run.backend)
                    if claim.took_over:
                        _cleanup_after_dead_worker(backend, claim)
                    identity = " ".join(filter(None, [backend.system_identity(environment), runner.identity()]))
                    outcome = trial_run(
                        backend,
                        spec,
                        runner,
                        record=_step_sink(claim),
                        cancelled=stop_requested,
                        final_state=archive,
                        final_state_max_bytes=final_states.max_bytes(),
                    )
                    refused = gw.budget_refusals if gw is not None else 0
                failed = gw.gateway_failures if gw is not None else 0
                limit_hit = gw.limit_hit if gw is not None else ""
            except BudgetExhausted as exc:
                return leases.trial_fail(claim, f"stopped by budget: {exc}", retryable=False, end=TrialEnd.BUDGET)
            except TrialCancelled:
                if heartbeat.lost.is_set():
                    return leases.AttemptResult.LOST
                leases.trial_cancelled(claim)
                return leases.AttemptResult.CANCELLED
            except SoftTimeLimitExceeded:
                return leases.trial_fail(claim, "the task's time limit was reached", retryable=False)
            except AgentError as exc:
                if gw is not None and gw.gateway_failures:
                    return _gateway_failed(claim, gw.gateway_failures)
                if gw is not None and gw.budget_refusals:
                    # A harness that ended in error because the budget was spent: the budget's doing.
                    return leases.trial_fail(
                        claim,
                        f"stopped by budget: the gateway refused {gw.budget_refusals} model call(s) once the run's "
                        f"budget was spent ({exc})",
                        retryable=False,
                        end=TrialEnd.BUDGET,
                    )
                if gw is not None and gw.limit_hit:
                    return _call_cap_hit(claim, gw.limit_hit)
                return leases.trial_fail(
                    claim, f"{type(exc).__name__}: {exc}", retryable=exc.retryable, end=TrialEnd.AGENT_ERROR
                )
            except VerifierAuditFailed as exc:
                # The verifier is not running on the system recorded: another attempt would find the same.
                return leases.trial_fail(claim, f"{type(exc).__name__}: {exc}", retryable=False)
            except SandboxError as exc:
                if _system_being_built(trial):
                    # A build started (or ran into its last part) since the look above.
                    return leases.trial_wait(claim)
                return leases.trial_fail(claim, f"{type(exc).__name__}: {exc}", retryable=True)
            except Exception:
                # Unexpected: still infrastructure from the agent's point of view, so bounded retries.
                return leases.trial_fail(claim, traceback.format_exc(limit=8), retryable=True)
        if refused:
            # A harness in the sandbox was told the budget is spent and ended as best it could: what
            # it left is not the agent's own result, so no verdict is recorded.
            return leases.trial_fail(
                claim,
                f"stopped by budget: the gateway refused {refused} model call(s) once the run's budget was spent",
                retryable=False,
                end=TrialEnd.BUDGET,
            )
        if failed:
            return _gateway_failed(claim, failed)
        if gw is not None and gw.forwarded and not gw.answered:
            # Every model call failed (the upstream's errors, after the harness's own retries): whatever the
            # agent's program did then, and however it ended, no model ever acted, so there is no verdict.
            return leases.trial_fail(
                claim,
                f"the model never answered: all {gw.forwarded} model call(s) of the agent failed",
                retryable=False,
                end=TrialEnd.AGENT_ERROR,
            )
        if limit_hit:
            return _call_cap_hit(claim, limit_hit)
        return (
            leases.AttemptResult.DONE
            if _record(claim, trial, outcome, identity, archive)
            else leases.AttemptResult.LOST
        )
    finally:
        if archive is not None:
            archive.unlink(missing_ok=True)


def _system_being_built(trial: Trial) -> bool:
    """The sandbox system this trial's agent needs is not ready but is being built (or will be, as
    soon as its system packages are there): waiting for it is no failure."""
    return sandbox_status(pin_runtimes(trial.agent_config)).waits


def _gateway_failed(claim: leases.Claim, failed: int) -> leases.AttemptResult:
    """The model gateway itself refused or failed some of the agent's calls (its limits, its key, its
    own error): what the agent left is not its own result, so no verdict, and another attempt."""
    return leases.trial_fail(
        claim,
        f"the model gateway failed {failed} model call(s) itself (see the trial's model calls): not the agent's doing",
        retryable=True,
        end=TrialEnd.INFRASTRUCTURE,
    )


def _call_cap_hit(claim: leases.Claim, reason: str) -> leases.AttemptResult:
    """The harness made more requests of its gateway than the trial's call cap (it looped or retried
    without end): the agent's own failure, so no verdict and no retry, which would loop the same."""
    return leases.trial_fail(claim, reason, retryable=False, end=TrialEnd.AGENT_ERROR)


def _record(claim: leases.Claim, trial: Trial, outcome: TrialOutcome, identity: str, archive: Path | None) -> bool:
    """Record the outcome with the kept final state; the stored archive goes again if recording lost.

    When recording raises, the commit may still have landed (the connection can drop while the
    server commits), so the archive stays: `final_states.prune_unreferenced` removes it later
    if no record points to it.
    """
    kept = None
    if archive is not None and outcome.final_state is not None:
        name = final_states.store(trial.run_id, trial.pk, archive)
        kept = leases.KeptState(name, outcome.final_state.sha256, outcome.final_state.size)
    recorded = leases.trial_record(claim, outcome, system_identity=identity, kept=kept)
    if not recorded and kept is not None:
        final_states.delete(kept.name)
    return recorded


def _cleanup_after_dead_worker(backend: SandboxBackend, claim: leases.Claim) -> None:
    try:
        removed = backend.cleanup_orphans()
        logger.info("trial %s: removed %d sandbox(es) left by a dead worker", claim.trial_id, removed)
    except Exception:
        logger.exception("trial %s: could not clean up after the dead worker", claim.trial_id)


def trial_execute(
    trial_id: int,
    *,
    worker: str = "",
    backend_factory: Callable[[str], SandboxBackend] | None = None,
    abandoned: str = "",
) -> leases.AttemptResult | leases.ClaimRefused:
    """Run a trial to its end unless it is finished, cancelled or held by a live worker.

    Returns how its last attempt ended (an AttemptResult other than REQUEUED; WAITING: the sandbox
    system is being built, call again later) or why it did not run (a ClaimRefused). Safe to call
    any number of times. Raises AttemptInterrupted when an attempt loses the database; `abandoned`
    is then its token, given back by the retry (`leases.trial_claim`).
    """
    factory = backend_factory or default_backend_factory
    while True:
        claim = leases.trial_claim(trial_id, worker, abandoned=abandoned)
        if isinstance(claim, leases.ClaimRefused):
            return claim
        abandoned = ""
        try:
            result = _attempt(claim, factory)
        except (OperationalError, InterfaceError) as exc:
            raise AttemptInterrupted(trial_id, claim.token) from exc
        if result != leases.AttemptResult.REQUEUED:
            return result
        time.sleep(infrastructure_retry_delay(claim.attempt))
