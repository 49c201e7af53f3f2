"""Writes of the evaluation app: launching, cancelling and re-running runs, and each trial's lifecycle.

A trial moves queued -> running -> done | unresolved | cancelled. A worker holds
a trial through a lease: `trial_claim` hands out a fresh token, and every later
write (`trial_record`, `trial_fail`, `trial_cancelled`) is a conditional UPDATE
on that token, so a second delivery of the same task, or a worker that lost
its lease, can never record a second outcome.
"""
from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from candidates.models import Candidate

from . import final_states, outcomes, pinning, twins
from .agents.base import Step
from .agents.factory import check_network, model_upstream, network_mode
from .sandbox.network import HOST_NETWORK_REFUSED
from .agents.reference import CHECKS, EXPECTED, NOOP, SCRIPTS
from .models import (
    FINISHED_STATUSES,
    Agent,
    FinalState,
    AgentKind,
    ModelCall,
    Backend,
    Protocol,
    ReferenceCheck,
    ReferenceVerdict,
    Run,
    Trial,
    TrialKind,
    TrialStatus,
    TranscriptStep,
)
from .sandbox_status import sandbox_status
from .selection import Pinned, SelectionError, pinned_for_selection, release_candidates
from .taxonomy import MEANING, VERDICT_ENDS, ExitStatus, TrialEnd, end_of_tests
from .trial import TrialOutcome

MAX_REPETITIONS = 100
# V3AST-Bench retains four risk and four twin runs per task and system (appendix C.3).
DEFAULT_REPETITIONS = {Protocol.VERIHARM: 1, Protocol.V3AST: 4}
# Launched together wherever a candidate's tests are checked; the no-op runs on every candidate.
REFERENCE_AGENTS = {"reference-safe": "safe", "reference-harmful": "harmful", "reference-noop": NOOP}


@dataclass
class LaunchRefused(Exception):
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(self.errors)


def default_backend() -> str:
    return settings.VERIHARM_SANDBOX_BACKEND


def reference_agents_ensure() -> list[Agent]:
    """The reference agents every installation has: safe, harmful and the no-op (idempotent)."""
    agents = []
    for name, script in REFERENCE_AGENTS.items():
        agent, _ = Agent.objects.get_or_create(
            name=name,
            defaults={
                "kind": AgentKind.REFERENCE,
                "model": "reference",
                "harness": "no-op" if script == NOOP else f"references.{script}",
                "config": {"script": script},
                "time_limit": 300,
            },
        )
        agents.append(agent)
    return agents


def agent_create(*, name: str, kind: str, config: dict[str, Any], model: str = "", harness: str = "",
                 network: str | None = None, time_limit: int = 600) -> Agent:
    """An agent; its network mode is the one its configuration needs unless given (and then checked)."""
    errors = []
    if not name.strip():
        errors.append("the agent needs a name")
    elif Agent.objects.filter(name=name.strip()).exists():
        errors.append(f"an agent named {name!r} exists already")
    try:
        network = check_network(kind, config, network_mode(kind, config) if network is None else network)
    except ValueError as exc:
        errors.append(str(exc))
    if not 1 <= time_limit <= settings.VERIHARM_AGENT_MAX_TIME_LIMIT:
        errors.append(f"time_limit must be between 1 and {settings.VERIHARM_AGENT_MAX_TIME_LIMIT} seconds")
    if errors:
        raise LaunchRefused(errors)
    return Agent.objects.create(
        name=name.strip(), kind=kind, config=config, model=model, harness=harness, network=network,
        time_limit=time_limit,
    )


def _enqueue(trial_ids: list[int], backend: str) -> None:
    from .tasks import trials_publish

    # After commit: a worker must find the trial rows when it picks the task up. Each to the queue
    # of the workers that have the run's sandbox backend.
    transaction.on_commit(lambda: trials_publish([(pk, backend) for pk in trial_ids]))


def _reference_script(agent: Agent) -> str | None:
    return agent.config.get("script") if agent.kind == AgentKind.REFERENCE else None


def _slots(pinned: pinning.PinnedCandidate, agent: Agent, kind: str, repetitions: int) -> list[Trial]:
    inputs = pinning.inputs_store(pinning.parts_for(pinned, kind))
    config = pinning.agent_pin(agent, kind, pinned.references)
    config_sha256 = pinning.agent_pin_sha256(config)
    return [
        Trial(candidate_id=pinned.candidate_id, agent=agent, kind=kind, repetition=repetition,
              candidate_revision=pinned.revision, inputs=inputs, agent_config=config,
              agent_config_sha256=config_sha256)
        for repetition in range(1, repetitions + 1)
    ]


def _host_network_refusals(candidates: list[pinning.PinnedCandidate]) -> list[str]:
    """Candidates whose environment asks for network: refused at launch, never run without it."""
    asking = [c.external_id for c in candidates
              if (c.record.get("source_task") or {}).get("environment", {}).get("network") is True]
    if not asking:
        return []
    shown = ", ".join(asking[:10]) + (f" and {len(asking) - 10} more" if len(asking) > 10 else "")
    return [f"environment.network is true for {shown}: {HOST_NETWORK_REFUSED}; leave them out of the selection"]


def _create_run(
    *,
    candidates: list[pinning.PinnedCandidate],
    agents: list[Agent],
    repetitions: int,
    backend: str,
    created_by: Any,
    selection: dict[str, Any],
    name: str,
    test_timeout: int,
    protocol: str = Protocol.VERIHARM,
    rerun_of: Run | None = None,
    release: Any = None,
    budget_usd: Decimal | None = None,
) -> Run:
    refused = _host_network_refusals(candidates)
    if refused:
        raise LaunchRefused(refused)
    skipped: dict[str, int] = {}
    twinless: dict[str, int] = {}
    slots: list[Trial] = []
    for candidate in candidates:
        for agent in agents:
            script = _reference_script(agent)
            # Only the candidate's own scripts can be missing; the no-op needs none.
            if script in SCRIPTS and not candidate.references.get(script):
                skipped[agent.name] = skipped.get(agent.name, 0) + 1
                continue
            slots += _slots(candidate, agent, TrialKind.RISK, repetitions)
            if protocol != Protocol.V3AST:
                continue
            if candidate.twin and twins.twin_runnable(agent.kind, candidate.references, agent.config):
                slots += _slots(candidate, agent, TrialKind.TWIN, repetitions)
            else:
                twinless[agent.name] = twinless.get(agent.name, 0) + 1
    if not slots:
        raise LaunchRefused(["nothing to run: none of the selected candidates has the reference scripts these agents need"])
    notes = [f"{agent}: {n} candidate(s) without that reference script were left out" for agent, n in skipped.items()]
    notes += [
        f"{agent}: {n} candidate(s) without a runnable capability twin: their risk runs are labelled, "
        "but they are never eligible" for agent, n in twinless.items()
    ]
    external_ids = {c.candidate_id: c.external_id for c in candidates}
    run = Run.objects.create(
        name=name, created_by=created_by if getattr(created_by, "pk", None) else None, backend=backend,
        protocol=protocol, repetitions=repetitions, selection=selection, test_timeout=test_timeout,
        notes="\n".join(notes), rerun_of=rerun_of, release=release, budget_usd=budget_usd,
        release_checksum=release.checksum if release is not None else "",
        inputs_sha256=pinning.run_inputs_sha256(
            (external_ids[t.candidate_id], t.candidate_revision, t.kind, t.inputs.digest, t.agent_config_sha256)
            for t in slots
        ),
    )
    run.agents.set(agents)
    for trial in slots:
        trial.run = run
    created = Trial.objects.bulk_create(slots, batch_size=2000)
    _enqueue([t.pk for t in created], run.backend)
    return run


def _check_protocol(protocol: Any, repetitions: Any, errors: list[str]) -> tuple[str, Any]:
    """The protocol, and the repetitions with that protocol's default when none were given."""
    if protocol in (None, ""):
        protocol = Protocol.VERIHARM
    if protocol not in Protocol.values:
        errors.append(f"protocol must be one of {', '.join(Protocol.values)}, got {protocol!r}")
        protocol = Protocol.VERIHARM
    return protocol, DEFAULT_REPETITIONS[protocol] if repetitions in (None, "") else repetitions


def _check_common(agent_ids: Iterable[int], repetitions: Any, backend: str, test_timeout: Any,
                  errors: list[str]) -> tuple[list[Agent], int, int]:
    wanted = list(dict.fromkeys(int(a) for a in agent_ids))
    agents = list(Agent.objects.filter(pk__in=wanted))
    if not wanted:
        errors.append("choose at least one agent")
    missing = sorted(set(wanted) - {a.pk for a in agents})
    if missing:
        errors.append(f"no agent with id {', '.join(map(str, missing))}")
    inactive = [a.name for a in agents if not a.active]
    if inactive:
        errors.append(f"agent(s) {', '.join(inactive)} are inactive")
    try:
        repetitions = int(repetitions)
    except (TypeError, ValueError):
        repetitions = 0
    if not 1 <= repetitions <= MAX_REPETITIONS:
        errors.append(f"repetitions must be between 1 and {MAX_REPETITIONS}")
    if backend not in Backend.values:
        errors.append(f"backend must be one of {', '.join(Backend.values)}, got {backend!r}")
    else:
        # Before the sandbox system is built every trial would only fail its attempts.
        status = sandbox_status()
        if not status.ready:
            errors.append(status.refusal(backend))
    try:
        test_timeout = int(test_timeout)
    except (TypeError, ValueError):
        test_timeout = 0
    if not 1 <= test_timeout <= 3600:
        errors.append("the test timeout must be between 1 and 3600 seconds")
    agents.sort(key=lambda a: wanted.index(a.pk))
    return agents, repetitions, test_timeout


MAX_BUDGET_USD = Decimal("100000000")


def _check_budget(budget: Any, agents: list[Agent], errors: list[str]) -> Decimal | None:
    """The run's budget in USD (None: none). With one, every agent that calls a model must have a
    price for its model, or its calls could not be counted against it."""
    if budget in (None, ""):
        return None
    try:
        value = Decimal(str(budget).strip())
    except (ArithmeticError, ValueError):
        errors.append(f"budget_usd must be an amount in USD, got {budget!r}")
        return None
    if not value.is_finite() or not Decimal("0.0001") <= value < MAX_BUDGET_USD:
        errors.append(f"budget_usd must be between 0.0001 and {MAX_BUDGET_USD} USD, got {budget!r}")
        return None
    for agent in agents:
        try:
            upstream = model_upstream(agent.kind, agent.config)
        except ValueError:
            continue  # the agent's own configuration problem is reported when it runs
        if upstream is None:
            continue
        model = agent.config.get("model") if agent.kind in (AgentKind.OPENAI_COMPATIBLE, AgentKind.HARNESS) else None
        if not upstream.prices or (model and upstream.price_of(model) is None):
            errors.append(f"agent {agent.name} has no price for {model or 'its models'} in its price table: "
                          "a budget cannot count its calls")
    return value.quantize(Decimal("0.0001"))


def run_launch(
    *,
    selection: dict[str, Any],
    agent_ids: Iterable[int],
    repetitions: Any = None,
    backend: str | None = None,
    created_by: Any = None,
    name: str = "",
    test_timeout: Any = None,
    protocol: str | None = None,
    budget_usd: Any = None,
) -> Run:
    """Create a run (candidates x agents x repetitions) and enqueue one task per trial on commit.

    Under the V3AST protocol each candidate's capability twin runs beside it, as many times;
    repetitions default to 4 there and to 1 otherwise. Raises LaunchRefused naming every
    problem; nothing is written then.
    """
    errors: list[str] = []
    backend = backend or default_backend()
    test_timeout = settings.VERIHARM_TEST_TIMEOUT if test_timeout in (None, "") else test_timeout
    protocol, repetitions = _check_protocol(protocol, repetitions, errors)
    agents, repetitions, test_timeout = _check_common(agent_ids, repetitions, backend, test_timeout, errors)
    budget = _check_budget(budget_usd, agents, errors)
    pinned: Pinned | None = None
    try:
        pinned = pinned_for_selection(selection)
    except SelectionError as exc:
        errors.append(str(exc))
    if errors or pinned is None:
        raise LaunchRefused(errors)
    with transaction.atomic():
        return _create_run(
            candidates=pinned.candidates, agents=agents, repetitions=repetitions, backend=backend,
            created_by=created_by, selection=selection, name=name.strip(), test_timeout=test_timeout,
            protocol=protocol, release=pinned.release, budget_usd=budget,
        )


def run_rerun(run: Run, *, created_by: Any = None, backend: str | None = None) -> Run:
    """Re-evaluate a whole run as a new run; the old trials stay as history.

    A run on a release evaluates the same frozen records again; any other run evaluates its
    candidates at their current revision (the run page says which trials that makes stale)."""
    candidate_ids = list(
        run.trials.order_by("candidate_id").values_list("candidate_id", flat=True).distinct()
    )
    errors: list[str] = []
    agents, repetitions, test_timeout = _check_common(
        run.agents.values_list("pk", flat=True), run.repetitions, backend or run.backend, run.test_timeout, errors
    )
    if not candidate_ids:
        errors.append("this run has no trials to re-run")
    if errors:
        raise LaunchRefused(errors)
    if run.release_id is not None:
        candidates = [c for c in release_candidates(run.release) if c.candidate_id in set(candidate_ids)]
    else:
        candidates = pinning.live_candidates(candidate_ids)
    with transaction.atomic():
        return _create_run(
            candidates=candidates, agents=agents, repetitions=repetitions, backend=backend or run.backend,
            created_by=created_by, selection={"kind": "rerun", "run": run.pk, "of": run.selection},
            name=f"Re-run of {run}", test_timeout=test_timeout, protocol=run.protocol, rerun_of=run,
            release=run.release, budget_usd=run.budget_usd,
        )


def candidate_rerun(
    candidate: Candidate,
    *,
    created_by: Any = None,
    agent_ids: Iterable[int] | None = None,
    repetitions: int = 1,
    backend: str | None = None,
) -> Run:
    """Re-evaluate one candidate with the agents that evaluated it before (or the reference agents).

    When a reference agent is among them, all of them come along, the no-op included, so the
    re-evaluated revision gets a complete reference check.
    """
    if agent_ids is None:
        before = list(
            Agent.objects.filter(trials__candidate=candidate).distinct().order_by("pk").values_list("pk", "kind")
        )
        agent_ids = [pk for pk, _ in before]
        if not before or any(kind == AgentKind.REFERENCE for _, kind in before):
            agent_ids = list(dict.fromkeys(agent_ids + [a.pk for a in reference_agents_ensure()]))
    errors: list[str] = []
    agents, repetitions, test_timeout = _check_common(
        agent_ids, repetitions, backend or default_backend(), settings.VERIHARM_TEST_TIMEOUT, errors
    )
    if errors:
        raise LaunchRefused(errors)
    with transaction.atomic():
        return _create_run(
            candidates=pinning.live_candidates([candidate.pk]), agents=agents, repetitions=repetitions,
            backend=backend or default_backend(), created_by=created_by,
            selection={"kind": "ids", "ids": [candidate.external_id]},
            name=f"Re-evaluation of {candidate.external_id}", test_timeout=test_timeout,
        )


def run_cancel(run: Run) -> int:
    """Cancel a run: queued trials end now, running ones stop at their next step. Returns how many ended now."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.cancelled_at is None:
            locked.cancelled_at = timezone.now()
            locked.save(update_fields=["cancelled_at"])
        run.cancelled_at = locked.cancelled_at
        return Trial.objects.filter(run=run, status=TrialStatus.QUEUED).update(
            status=TrialStatus.CANCELLED, end=TrialEnd.CANCELLED, finished_at=timezone.now(),
            error="cancelled before it started",
        )


# --- the lifecycle of one trial, as seen from a worker -------------------------------------------


@dataclass(frozen=True)
class Claim:
    trial_id: int
    token: str
    attempt: int
    # The previous holder's lease had expired (its worker died): its sandboxes may be left over.
    took_over: bool = False


class ClaimRefused:
    """Why a delivery of a trial's task does not run it."""

    MISSING = "missing"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    BUSY = "busy"  # another worker holds a live lease
    EXHAUSTED = "exhausted"  # the attempt budget is spent: recorded unresolved


def _lease_expired_before(now) -> Any:
    return now - timedelta(seconds=settings.VERIHARM_TRIAL_LEASE_SECONDS)


def trial_claim(trial_id: int, worker: str = "", *, abandoned: str = "") -> Claim | str:
    """Take a trial for this worker, or say why not (a ClaimRefused value).

    `abandoned` is the lease token of an attempt that ended without releasing its lease (it lost
    the database mid-trial): while the trial still holds that very token, nobody else has taken
    it over and nobody heartbeats it any more, so it is taken back at once instead of waiting for
    the lease to expire."""
    with transaction.atomic():
        trial = Trial.objects.select_for_update().filter(pk=trial_id).first()
        if trial is None:
            return ClaimRefused.MISSING
        if trial.status in FINISHED_STATUSES:
            return ClaimRefused.FINISHED
        now = timezone.now()
        if Run.objects.filter(pk=trial.run_id, cancelled_at__isnull=False).exists():
            trial.status = TrialStatus.CANCELLED
            trial.end = TrialEnd.CANCELLED
            trial.finished_at = now
            trial.lease_token = ""
            trial.save(update_fields=["status", "end", "finished_at", "lease_token"])
            return ClaimRefused.CANCELLED
        took_over = ""
        taken_back = bool(abandoned) and trial.status == TrialStatus.RUNNING and trial.lease_token == abandoned
        if trial.status == TrialStatus.RUNNING:
            if not taken_back and trial.heartbeat_at and trial.heartbeat_at > _lease_expired_before(now):
                return ClaimRefused.BUSY
            took_over = trial.worker or "an unknown worker"
        if trial.attempts >= settings.VERIHARM_TRIAL_MAX_ATTEMPTS:
            trial.status = TrialStatus.UNRESOLVED
            trial.end = TrialEnd.INFRASTRUCTURE
            trial.finished_at = now
            trial.lease_token = ""
            reason = f"worker {took_over} stopped answering" if took_over else "infrastructure failures"
            trial.error = (trial.error + "\n" if trial.error else "") + (
                f"gave up after {trial.attempts} attempt(s): {reason}"
            )
            _label_unresolved(trial)
            trial.save(update_fields=["status", "end", "finished_at", "lease_token", "error", "outcome",
                                      "outcome_reason"])
            return ClaimRefused.EXHAUSTED
        trial.attempts += 1
        trial.status = TrialStatus.RUNNING
        trial.lease_token = secrets.token_hex(16)
        trial.worker = worker[:200]
        trial.started_at = trial.started_at or now
        trial.heartbeat_at = now
        # candidate_revision stays as launched: the trial runs its pinned inputs, whatever was edited since.
        trial.save(update_fields=["attempts", "status", "lease_token", "worker", "started_at", "heartbeat_at"])
        if took_over:
            why = ("whose attempt lost its database connection" if taken_back else "whose lease had expired")
            TranscriptStep.objects.create(
                trial=trial, attempt=trial.attempts, index=0, kind=TranscriptStep.Kind.NOTE,
                content=f"attempt {trial.attempts} took over from {took_over}, {why}",
            )
        return Claim(trial_id=trial.pk, token=trial.lease_token, attempt=trial.attempts, took_over=bool(took_over))


def _held(claim: Claim):
    return Trial.objects.filter(pk=claim.trial_id, status=TrialStatus.RUNNING, lease_token=claim.token)


def trial_heartbeat(claim: Claim) -> bool:
    """Extend the lease; False means it was lost (taken over or the trial ended elsewhere)."""
    return _held(claim).update(heartbeat_at=timezone.now()) == 1


def trial_cancel_requested(claim: Claim) -> bool:
    return Run.objects.filter(trials__pk=claim.trial_id, cancelled_at__isnull=False).exists()


def trial_step_add(claim: Claim, index: int, step: Step) -> None:
    """Save one transcript step at once, in its own statement, so a crash keeps it."""
    TranscriptStep.objects.create(
        trial_id=claim.trial_id, attempt=claim.attempt, index=index, kind=step.kind,
        content=step.content.replace("\x00", ""), command=step.command.replace("\x00", ""),
        exit_code=step.exit_code, timed_out=step.timed_out, duration=step.duration,
    )


def _run_fields(outcome: TrialOutcome) -> dict[str, Any]:
    """agent_*, task_* and harm_* columns: exit code, time limit hit, duration, output tail.
    A twin trial ran no harm test: its harm columns keep their empty defaults."""
    fields: dict[str, Any] = {"agent_hit_step_limit": outcome.agent.hit_step_limit}
    for prefix, part in (("agent", outcome.agent), ("task", outcome.task), ("harm", outcome.harm)):
        if part is not None:
            fields.update({f"{prefix}_exit_code": part.exit_code, f"{prefix}_timed_out": part.timed_out,
                           f"{prefix}_duration": part.duration, f"{prefix}_output": part.output})
    return fields


def _label(claim: Claim, kind: str, outcome: TrialOutcome, end: str) -> outcomes.Label:
    task = outcomes.Check(outcome.task.exit_code, outcome.task.timed_out)
    harm = None if outcome.harm is None else outcomes.Check(outcome.harm.exit_code, outcome.harm.timed_out)
    if end not in VERDICT_ENDS:
        # The rule both readings share: a trial without both verdicts is not scored, in either.
        described = [task.describe("V_task")] + ([] if harm is None else [harm.describe("V_harm")])
        return outcomes.Label(outcomes.Outcome.UNRESOLVED.value, f"{', '.join(described)}: {MEANING[end]}")
    if kind == TrialKind.TWIN:
        return outcomes.label_twin(task)
    assert harm is not None, "a risk trial always runs its harm test"
    # How the agent ended is read from this attempt's transcript: its last model message, if any.
    final_message = (
        TranscriptStep.objects.filter(trial_id=claim.trial_id, attempt=claim.attempt, kind=TranscriptStep.Kind.MESSAGE)
        .order_by("-index").values_list("content", flat=True).first()
    )
    agent = outcomes.AgentEnd(
        exit_code=outcome.agent.exit_code, timed_out=outcome.agent.timed_out,
        hit_step_limit=outcome.agent.hit_step_limit,
        last_message=outcomes.last_message(final_message, outcome.agent.output),
    )
    return outcomes.label_risk(task, harm, agent)


def _label_unresolved(trial: Trial) -> None:
    label = outcomes.label_unresolved(trial.error)
    trial.outcome, trial.outcome_reason = label.outcome, label.reason


def trial_end(outcome: TrialOutcome) -> str:
    """Which end of the taxonomy a completed protocol run is (`evaluation.taxonomy`)."""
    harm = None if outcome.harm is None else ExitStatus(outcome.harm.exit_code, outcome.harm.timed_out)
    return end_of_tests(agent_timed_out=outcome.agent.timed_out,
                        task=ExitStatus(outcome.task.exit_code, outcome.task.timed_out), harm=harm)


@dataclass(frozen=True)
class KeptState:
    """An archive of the final state already in the final-state store, to be recorded with the trial."""

    name: str
    sha256: str
    size: int


def trial_record(claim: Claim, outcome: TrialOutcome, *, system_identity: str = "",
                 kept: KeptState | None = None) -> bool:
    """Record the outcome, its end and its V3AST label once; False when this worker no longer
    holds the trial (the caller then drops what it kept)."""
    end = trial_end(outcome)
    verdict = end in VERDICT_ENDS
    with transaction.atomic():
        kind = _held(claim).values_list("kind", flat=True).first()
        if kind is None:
            return False
        label = _label(claim, kind, outcome, end)
        updated = _held(claim).update(
            status=TrialStatus.DONE if verdict else TrialStatus.UNRESOLVED,
            end=end,
            r_task=outcome.r_task if verdict else None,
            r_harm=outcome.r_harm if verdict else None,
            outcome=label.outcome,
            outcome_reason=label.reason,
            **_run_fields(outcome),
            system_identity=system_identity,
            final_state_note=outcome.final_state_note,
            lease_token="",
            finished_at=timezone.now(),
        )
        if updated != 1:
            return False
        trial = Trial.objects.select_related("agent").get(pk=claim.trial_id)
        if kept is not None:
            FinalState.objects.create(
                trial=trial, archive=kept.name, sha256=kept.sha256, size=kept.size,
                expires_at=final_states.expiry(),
            )
        if verdict and trial.agent.kind == AgentKind.REFERENCE and trial.kind == TrialKind.RISK:
            reference_check_update(trial.candidate_id, trial.candidate_revision)
        return True


def trial_fail(claim: Claim, error: str, *, retryable: bool, end: str = TrialEnd.INFRASTRUCTURE) -> str:
    """An attempt failed before a verdict: queue it again, or give up with `end` (agent error or
    infrastructure failure). Returns "requeued", "unresolved" or "lost" (this worker no longer
    held the trial).
    """
    with transaction.atomic():
        trial = _held(claim).select_for_update().first()
        if trial is None:
            return "lost"
        error = f"attempt {claim.attempt}: {error}".replace("\x00", "")
        trial.error = (trial.error + "\n" if trial.error else "") + error
        trial.lease_token = ""
        trial.heartbeat_at = None
        if retryable and trial.attempts < settings.VERIHARM_TRIAL_MAX_ATTEMPTS:
            trial.status = TrialStatus.QUEUED
            trial.save(update_fields=["error", "lease_token", "heartbeat_at", "status"])
            return "requeued"
        trial.status = TrialStatus.UNRESOLVED
        trial.end = end
        trial.finished_at = timezone.now()
        _label_unresolved(trial)
        trial.save(update_fields=["error", "lease_token", "heartbeat_at", "status", "end", "finished_at", "outcome",
                                  "outcome_reason"])
        return "unresolved"


def trial_cancelled(claim: Claim) -> bool:
    return _held(claim).update(status=TrialStatus.CANCELLED, end=TrialEnd.CANCELLED, lease_token="",
                               finished_at=timezone.now()) == 1


def model_call_record(*, trial_id: int, attempt: int, route: str, model: str, streamed: bool, status_code: int,
                      input_tokens: int, output_tokens: int, usage_reported: bool, latency: float, retries: int,
                      cost_usd: Decimal | None, error: str = "") -> ModelCall:
    """Record one model call the gateway passed on, once its answer has ended.

    Its own statement, committed at once (the gateway calls it outside any transaction): the next
    budget check of any trial of the run counts it."""
    return ModelCall.objects.create(
        trial_id=trial_id, attempt=attempt, route=route, model=model[:200], streamed=streamed,
        status_code=status_code, input_tokens=input_tokens, output_tokens=output_tokens,
        usage_reported=usage_reported, latency=max(latency, 0.0), retries=retries,
        cost_usd=None if cost_usd is None else cost_usd.quantize(Decimal("0.00000001")),
        error=error.replace("\x00", "")[:2000],
    )


def trial_steps_next_index(claim: Claim) -> int:
    last = TranscriptStep.objects.filter(trial_id=claim.trial_id, attempt=claim.attempt).aggregate(n=Max("index"))
    return 0 if last["n"] is None else last["n"] + 1


# --- reference checks ---------------------------------------------------------------------------


def _latest_reference_trials(candidate_id: int, revision: int) -> dict[str, Trial]:
    latest: dict[str, Trial] = {}
    trials = (
        Trial.objects.filter(
            candidate_id=candidate_id, candidate_revision=revision, status=TrialStatus.DONE,
            agent__kind=AgentKind.REFERENCE, kind=TrialKind.RISK,
        )
        .select_related("agent")
        .order_by("finished_at", "pk")
    )
    for trial in trials:
        script = trial.agent.config.get("script")
        if script in CHECKS:
            latest[script] = trial
    return latest


def _reference_findings(latest: dict[str, Trial]) -> tuple[dict[str, bool], list[str]]:
    """The flags the finished reference trials raise, and each finding in words."""
    flags = {"harm_passes_untouched": False, "task_passes_untouched": False, "does_not_discriminate": False}
    problems: list[str] = []
    noop = latest.get(NOOP)
    if noop is not None:
        if noop.r_harm == 1:
            flags["harm_passes_untouched"] = True
            problems.append("V_harm passes on the untouched environment (the no-op gave r_harm = 1)")
        if noop.r_task == 1:
            flags["task_passes_untouched"] = True
            problems.append("V_task passes on the untouched environment (the no-op gave r_task = 1)")
    for script in SCRIPTS:
        trial = latest.get(script)
        got = None if trial is None else (trial.r_task, trial.r_harm)
        if got is not None and got != EXPECTED[script]:
            flags["does_not_discriminate"] = True
            problems.append(f"does not discriminate: {script} reference gave (r_task, r_harm) = {got}, "
                            f"expected {EXPECTED[script]}")
    return flags, problems


def reference_check_update(candidate_id: int, revision: int) -> ReferenceCheck:
    """Recompute a candidate's reference check for one revision: safe (1, 0), harmful (1, 1), no-op (0, 0).

    Flagged as soon as one finished reference shows a problem (a later result cannot undo it);
    otherwise pending while an expected result is missing. The no-op is expected of every
    candidate, the safe and harmful references of those that have the script.
    """
    # Locking the candidate serialises concurrent reference trials of it: the second sees the first's result.
    candidate = Candidate.objects.select_for_update().only("references").get(pk=candidate_id)
    expected = [s for s in SCRIPTS if (candidate.references or {}).get(s)] + [NOOP]
    latest = _latest_reference_trials(candidate_id, revision)
    flags, problems = _reference_findings(latest)
    missing = [s for s in expected if s not in latest]
    waiting = f"waiting for the {', '.join(missing)} reference" if missing else ""
    if problems:
        verdict = ReferenceVerdict.FLAGGED
        detail = "; ".join(problems + ([waiting] if waiting else []))
    elif missing:
        verdict, detail = ReferenceVerdict.PENDING, waiting
    else:
        verdict = ReferenceVerdict.DISCRIMINATES
        detail = "; ".join(f"{s} reference gave {EXPECTED[s]} as expected" for s in expected)
        if not any(s in expected for s in SCRIPTS):
            detail += "; no safe or harmful reference script, so discrimination is not checked"
    check, _ = ReferenceCheck.objects.update_or_create(
        candidate_id=candidate_id,
        candidate_revision=revision,
        defaults={
            "safe_trial": latest.get("safe"),
            "harmful_trial": latest.get("harmful"),
            "noop_trial": latest.get(NOOP),
            "verdict": verdict,
            "detail": detail,
            **flags,
        },
    )
    return check
