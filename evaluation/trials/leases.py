"""Each trial's lifecycle as seen from a worker: claim, heartbeat, transcript, record or fail.

A trial moves queued -> running -> done | unresolved | cancelled. A worker holds
a trial through a lease: `trial_claim` hands out a fresh token, and every later
write (`trial_record`, `trial_fail`, `trial_cancelled`) is a conditional UPDATE
on that token, so a second delivery of the same task, or a worker that lost
its lease, can never record a second outcome. The lease itself (claim, heartbeat, release, the
row under the token) is `veriharm_site.leased_work`'s, over `TRIAL_LEASE`; this module states a
trial's own rules (cancelled runs, attempts) and how each step and the outcome are recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils import timezone

from evaluation.agents.base import Step
from evaluation.models import (
    FINISHED_STATUSES,
    AgentKind,
    FinalState,
    Run,
    TranscriptStep,
    Trial,
    TrialKind,
    TrialStatus,
)
from evaluation.models.taxonomy import MEANING, VERDICT_ENDS, ExitStatus, TrialEnd, end_of_tests
from evaluation.trials import final_states
from evaluation.trials.protocol import TrialOutcome
from evaluation.trials.reference_checks import reference_check_update
from evaluation.v3ast import outcomes
from veriharm_site.leased_work.leases import (
    Lease,
    Taken,
    lease_claim,
    lease_heartbeat,
    lease_held,
    lease_locked,
    lease_release,
)


@dataclass(frozen=True)
class Claim:
    trial_id: int
    token: str
    attempt: int
    # The previous holder's lease had expired (its worker died): its sandboxes may be left over.
    took_over: bool = False


class ClaimRefused(StrEnum):
    """Why a delivery of a trial's task does not run it: the core's reasons and a trial's own two."""

    MISSING = "missing"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    BUSY = "busy"  # another worker holds a live lease
    EXHAUSTED = "exhausted"  # the attempt budget is spent: recorded unresolved


class AttemptResult(StrEnum):
    """How an attempt at a trial ended, as the worker that made it sees it."""

    DONE = "done"  # recorded with a verdict
    REQUEUED = "requeued"  # failed, queued for another attempt
    # The sandbox system is being built: queued again, the attempt not spent (the core's WAITING).
    WAITING = "waiting"
    UNRESOLVED = "unresolved"  # failed for good
    CANCELLED = "cancelled"
    LOST = "lost"  # this worker no longer held the trial


# How a trial holds its lease: the core's claim, heartbeat and conditional writes over these fields.
TRIAL_LEASE = Lease(
    model=Trial,
    queued=TrialStatus.QUEUED,
    running=TrialStatus.RUNNING,
    finished=tuple(FINISHED_STATUSES),
)


def trial_claim(trial_id: int, worker: str = "", *, abandoned: str = "") -> Claim | ClaimRefused:
    """Take a trial for this worker, or say why not (a ClaimRefused value).

    `abandoned` is the lease token of an attempt that ended without releasing its lease (it lost
    the database mid-trial): while the trial still holds that very token, nobody else has taken
    it over and nobody heartbeats it any more, so it is taken back at once instead of waiting for
    the lease to expire. A trial's own rules beside the core's: a cancelled run's trial ends
    cancelled, a trial out of attempts ends unresolved, and each take counts an attempt."""

    def cancelled(trial: Trial, now: datetime) -> ClaimRefused | None:
        if not Run.objects.filter(pk=trial.run_id, cancelled_at__isnull=False).exists():
            return None
        trial.status = TrialStatus.CANCELLED
        trial.end = TrialEnd.CANCELLED
        trial.finished_at = now
        trial.lease_token = ""
        trial.save(update_fields=["status", "end", "finished_at", "lease_token"])
        return ClaimRefused.CANCELLED

    def exhausted(trial: Trial, now: datetime, previous: str) -> ClaimRefused | None:
        if trial.attempts < settings.VERIHARM_TRIAL_MAX_ATTEMPTS:
            return None
        trial.status = TrialStatus.UNRESOLVED
        trial.end = TrialEnd.INFRASTRUCTURE
        trial.finished_at = now
        trial.lease_token = ""
        reason = f"worker {previous} stopped answering" if previous else "infrastructure failures"
        note = f"gave up after {trial.attempts} attempt(s): {reason}"
        trial.error = f"{trial.error}\n{note}" if trial.error else note
        _label_unresolved(trial)
        trial.save(update_fields=["status", "end", "finished_at", "lease_token", "error", "outcome", "outcome_reason"])
        return ClaimRefused.EXHAUSTED

    def count_attempt(trial: Trial, now: datetime) -> list[str]:
        # candidate_revision stays as launched: the trial runs its pinned inputs, whatever was edited since.
        trial.attempts += 1
        return ["attempts"]

    with transaction.atomic():
        taken = lease_claim(
            TRIAL_LEASE,
            trial_id,
            worker,
            abandoned=abandoned,
            before_busy=cancelled,
            before_take=exhausted,
            on_take=count_attempt,
        )
        if not isinstance(taken, Taken):
            return ClaimRefused(taken)
        trial = taken.row
        if taken.previous:
            why = "whose attempt lost its database connection" if taken.taken_back else "whose lease had expired"
            TranscriptStep.objects.create(
                trial=trial,
                attempt=trial.attempts,
                index=0,
                kind=TranscriptStep.Kind.NOTE,
                content=f"attempt {trial.attempts} took over from {taken.previous}, {why}",
            )
        # An abandoned attempt taken back may have left sandboxes as a dead worker does.
        return Claim(trial_id=trial.pk, token=taken.token, attempt=trial.attempts, took_over=bool(taken.previous))


def _held(claim: Claim) -> QuerySet[Trial]:
    return lease_held(TRIAL_LEASE, claim.trial_id, claim.token)


def trial_heartbeat(claim: Claim) -> bool:
    """Extend the lease; False means it was lost (taken over or the trial ended elsewhere)."""
    return lease_heartbeat(TRIAL_LEASE, claim.trial_id, claim.token)


def trial_cancel_requested(claim: Claim) -> bool:
    return Run.objects.filter(trials__pk=claim.trial_id, cancelled_at__isnull=False).exists()


def trial_step_add(claim: Claim, index: int, step: Step) -> None:
    """Save one transcript step at once, in its own statement, so a crash keeps it."""
    TranscriptStep.objects.create(
        trial_id=claim.trial_id,
        attempt=claim.attempt,
        index=index,
        kind=step.kind,
        content=step.content.replace("\x00", ""),
        command=step.command.replace("\x00", ""),
        exit_code=step.exit_code,
        timed_out=step.timed_out,
        duration=step.duration,
    )


def _run_fields(outcome: TrialOutcome) -> dict[str, Any]:
    """agent_*, task_* and harm_* columns: exit code, time limit hit, duration, output tail.
    A twin trial ran no harm test: its harm columns keep their empty defaults."""
    fields: dict[str, Any] = {"agent_hit_step_limit": outcome.agent.hit_step_limit}
    for prefix, part in (("agent", outcome.agent), ("task", outcome.task), ("harm", outcome.harm)):
        if part is not None:
            fields.update(
                {
                    f"{prefix}_exit_code": part.exit_code,
                    f"{prefix}_timed_out": part.timed_out,
                    f"{prefix}_duration": part.duration,
                    f"{prefix}_output": part.output,
                }
            )
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
        .order_by("-index")
        .values_list("content", flat=True)
        .first()
    )
    agent = outcomes.AgentEnd(
        exit_code=outcome.agent.exit_code,
        timed_out=outcome.agent.timed_out,
        hit_step_limit=outcome.agent.hit_step_limit,
        last_message=outcomes.last_message(final_message, outcome.agent.output),
    )
    return outcomes.label_risk(task, harm, agent)


def _label_unresolved(trial: Trial) -> None:
    label = outcomes.label_unresolved(trial.error)
    trial.outcome, trial.outcome_reason = label.outcome, label.reason


def trial_end(outcome: TrialOutcome) -> str:
    """Which end of the taxonomy a completed protocol run is (`evaluation.models.taxonomy`)."""
    harm = None if outcome.harm is None else ExitStatus(outcome.harm.exit_code, outcome.harm.timed_out)
    return end_of_tests(
        agent_timed_out=outcome.agent.timed_out,
        task=ExitStatus(outcome.task.exit_code, outcome.task.timed_out),
        harm=harm,
    )


@dataclass(frozen=True)
class KeptState:
    """An archive of the final state already in the final-state store, to be recorded with the trial."""

    name: str
    sha256: str
    size: int


def trial_record(
    claim: Claim, outcome: TrialOutcome, *, system_identity: str = "", kept: KeptState | None = None
) -> bool:
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
                trial=trial,
                archive=kept.name,
                sha256=kept.sha256,
                size=kept.size,
                expires_at=final_states.expiry(),
            )
        if verdict and trial.agent.kind == AgentKind.REFERENCE and trial.kind == TrialKind.RISK:
            reference_check_update(trial.candidate_id, trial.candidate_revision)
        return True


def trial_fail(claim: Claim, error: str, *, retryable: bool, end: str = TrialEnd.INFRASTRUCTURE) -> AttemptResult:
    """An attempt failed before a verdict: queue it again, or give up with `end` (agent error or
    infrastructure failure). Returns REQUEUED, UNRESOLVED or LOST (this worker no longer
    held the trial).
    """
    with transaction.atomic():
        trial = lease_locked(TRIAL_LEASE, claim.trial_id, claim.token)
        if trial is None:
            return AttemptResult.LOST
        error = f"attempt {claim.attempt}: {error}".replace("\x00", "")
        trial.error = (trial.error + "\n" if trial.error else "") + error
        trial.lease_token = ""
        trial.heartbeat_at = None
        if retryable and trial.attempts < settings.VERIHARM_TRIAL_MAX_ATTEMPTS:
            trial.status = TrialStatus.QUEUED
            trial.save(update_fields=["error", "lease_token", "heartbeat_at", "status"])
            return AttemptResult.REQUEUED
        trial.status = TrialStatus.UNRESOLVED
        trial.end = end
        trial.finished_at = timezone.now()
        _label_unresolved(trial)
        trial.save(
            update_fields=[
                "error",
                "lease_token",
                "heartbeat_at",
                "status",
                "end",
                "finished_at",
                "outcome",
                "outcome_reason",
            ]
        )
        return AttemptResult.UNRESOLVED


def trial_wait(claim: Claim) -> AttemptResult:
    """The sandbox system this trial needs is still being built: give the claim back as if it had
    never been made (queued, the attempt not counted, no error), for the task to come back later.
    Returns WAITING, or LOST when this worker no longer held the trial.

    The trial counts as queued now: the task's delayed retry is held by its worker, where the
    recovery sweep cannot see it, so a trial waiting longer than VERIHARM_RECOVERY_QUEUED_SECONDS
    would otherwise be published again at every sweep. While its task keeps coming back the trial
    never looks lost; once no task does (its worker died), the sweep publishes it as any other."""

    def give_back_attempt(trial: Trial) -> list[str]:
        trial.attempts = max(trial.attempts - 1, 0)
        if trial.attempts == 0:
            trial.started_at = None  # nothing has run yet
        return ["attempts", "started_at"]

    released = lease_release(TRIAL_LEASE, claim.trial_id, claim.token, give_back_attempt)
    return AttemptResult.WAITING if released else AttemptResult.LOST


def trial_cancelled(claim: Claim) -> bool:
    return (
        _held(claim).update(
            status=TrialStatus.CANCELLED, end=TrialEnd.CANCELLED, lease_token="", finished_at=timezone.now()
        )
        == 1
    )


def trial_steps_next_index(claim: Claim) -> int:
    last = TranscriptStep.objects.filter(trial_id=claim.trial_id, attempt=claim.attempt).aggregate(n=Max("index"))
    return 0 if last["n"] is None else last["n"] + 1
