"""Re-scoring: earlier trials' kept final states scored against a revision's tests, no agent run.

After a curator revises a candidate, an admin asks for its earlier risk trials to be scored
against the current revision's V_task and V_harm. Each re-score is a new result beside the
trial's own (`Rescore`), with the tests' hashes in its inputs; the trial is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from candidates.models import Candidate
from candidates.pipeline.format import sha256_text
from evaluation import queue
from evaluation.models import FinalState, Rescore, RescoreStatus, Trial, TrialInputs, TrialKind, TrialStatus
from evaluation.models.taxonomy import VERDICT_ENDS, ExitStatus, end_of_tests
from evaluation.sandbox.base import Environment
from evaluation.trials import final_states, pinning
from evaluation.trials.protocol import score_final_state
from evaluation.trials.sandboxes import default_backend_factory, sandbox_limits
from veriharm_site.refusals import Refused


class RescoreRefused(Refused):
    def __init__(self, message: str) -> None:
        super().__init__("", message)


def _inputs(trial: Trial) -> TrialInputs:
    assert trial.inputs is not None  # _rescorable reads only trials with inputs
    return trial.inputs


def _tested_with(trial: Trial) -> tuple[str, str]:
    inputs = _inputs(trial)
    return inputs.task_test_sha256, inputs.harm_test_sha256


def _rescorable(candidate: Candidate) -> QuerySet[Trial]:
    """Risk trials of the candidate with a verdict and a kept final state."""
    return (
        Trial.objects.filter(
            candidate=candidate,
            kind=TrialKind.RISK,
            status=TrialStatus.DONE,
            inputs__isnull=False,
            final_state__pruned_at__isnull=True,
        )
        .exclude(final_state__archive="")
        .select_related("inputs")
        .order_by("pk")
    )


def rescore_launch(candidate: Candidate, *, requested_by: Any = None) -> list[Rescore]:
    """Queue a re-score of every earlier trial whose tests differ from the current revision's.

    Safe to ask twice: a trial already re-scored against these tests keeps its one re-score.
    Raises RescoreRefused saying why when there is nothing to re-score.
    """
    with transaction.atomic():
        locked = Candidate.objects.select_for_update().select_related("source_task").get(pk=candidate.pk)
        task_test, harm_test = locked.source_task.task_test, locked.harm_test
        task_sha, harm_sha = sha256_text(task_test), sha256_text(harm_test)
        trials = [t for t in _rescorable(locked) if _tested_with(t) != (task_sha, harm_sha)]
        if not trials:
            raise RescoreRefused(
                f"nothing to re-score: no finished trial of {locked.external_id} with a kept final state ran "
                f"tests other than those of revision {locked.revision}"
            )
        rescores, created = [], []
        for trial in trials:
            inputs = pinning.inputs_store(pinning.rescore_parts(_inputs(trial), task_test, harm_test))
            rescore, new = Rescore.objects.get_or_create(
                trial=trial,
                inputs=inputs,
                defaults={
                    "candidate_revision": locked.revision,
                    "requested_by": requested_by if getattr(requested_by, "pk", None) else None,
                },
            )
            rescores.append(rescore)
            if new:
                created.append(rescore.pk)
        _enqueue(created)
        return rescores


def _enqueue(rescore_ids: list[int]) -> None:
    # Each to the queue of its trial's backend: re-scoring restores the final state in a sandbox.
    backends = dict(Rescore.objects.filter(pk__in=rescore_ids).values_list("pk", "trial__run__backend"))
    transaction.on_commit(lambda: queue.rescores_publish([(pk, backends[pk]) for pk in rescore_ids]))


class RescoreResult(StrEnum):
    """What one delivery of a re-score did."""

    DONE = "done"
    FAILED = "failed"
    MISSING = "missing"
    FINISHED = "finished"


@dataclass(frozen=True)
class Scored:
    end: str
    r_task: int | None
    r_harm: int | None
    fields: dict[str, Any]


def _scored(result: Any) -> Scored:
    task, harm = result.task, result.harm
    end = end_of_tests(
        agent_timed_out=False,
        task=ExitStatus(task.exit_code, task.timed_out),
        harm=ExitStatus(harm.exit_code, harm.timed_out),
    )
    verdict = end in VERDICT_ENDS
    fields = {
        "task_exit_code": task.exit_code,
        "task_timed_out": task.timed_out,
        "task_output": task.output,
        "harm_exit_code": harm.exit_code,
        "harm_timed_out": harm.timed_out,
        "harm_output": harm.output,
    }
    return Scored(end, int(task.passed) if verdict else None, int(harm.passed) if verdict else None, fields)


def rescore_execute(rescore_id: int, *, backend_factory: Any = None) -> RescoreResult:
    """Score one queued re-score and record it once (FINISHED: recorded already, by this or another
    delivery). Raises SandboxError for the
    task to retry; `rescore_fail` records a failure that retrying cannot mend."""
    rescore = Rescore.objects.select_related("trial__run", "trial__final_state", "inputs").filter(pk=rescore_id).first()
    if rescore is None:
        return RescoreResult.MISSING
    if rescore.status != RescoreStatus.QUEUED:
        return RescoreResult.FINISHED
    try:
        parts = pinning.inputs_verified(rescore.inputs)
        state = rescore.trial.final_state
    except (ValueError, FinalState.DoesNotExist) as exc:
        return rescore_fail(rescore_id, f"cannot re-score: {exc}")
    backend = (backend_factory or default_backend_factory)(rescore.trial.run.backend)
    environment = Environment.from_spec(dict(parts.environment) or None)
    try:
        with final_states.local_copy(state) as archive:
            result = score_final_state(
                backend,
                environment,
                sandbox_limits(),
                archive,
                parts.task_test,
                parts.harm_test,
                float(rescore.trial.run.test_timeout),
            )
    except (FileNotFoundError, ValueError) as exc:
        return rescore_fail(rescore_id, f"cannot re-score: {exc}")
    scored = _scored(result)
    recorded = Rescore.objects.filter(pk=rescore_id, status=RescoreStatus.QUEUED).update(
        status=RescoreStatus.DONE,
        end=scored.end,
        r_task=scored.r_task,
        r_harm=scored.r_harm,
        system_identity=backend.system_identity(environment),
        finished_at=timezone.now(),
        **scored.fields,
    )
    return RescoreResult.DONE if recorded else RescoreResult.FINISHED


def rescore_fail(rescore_id: int, error: str) -> RescoreResult:
    updated = Rescore.objects.filter(pk=rescore_id, status=RescoreStatus.QUEUED).update(
        status=RescoreStatus.FAILED,
        error=error.replace("\x00", ""),
        finished_at=timezone.now(),
    )
    return RescoreResult.FAILED if updated else RescoreResult.FINISHED


@dataclass(frozen=True)
class RescoreRow:
    rescore: Rescore
    original: tuple[int | None, int | None]
    rescored: tuple[int | None, int | None]
    flipped: bool | None


def candidate_rescores(candidate_id: int) -> list[RescoreRow]:
    """Every re-score of the candidate's trials, newest first, beside the trial's own verdict."""
    rows = (
        Rescore.objects.filter(trial__candidate_id=candidate_id)
        .select_related("trial__agent", "trial__inputs", "inputs")
        .order_by("-created_at", "-pk")
    )
    return [RescoreRow(r, (r.trial.r_task, r.trial.r_harm), (r.r_task, r.r_harm), r.flipped) for r in rows]


def rescorable_count(candidate: Candidate) -> int:
    """How many trials a re-score against the current revision would score (for the button)."""
    task_sha = sha256_text(candidate.source_task.task_test)
    harm_sha = sha256_text(candidate.harm_test)
    return sum(_tested_with(t) != (task_sha, harm_sha) for t in _rescorable(candidate))


def trial_rescores(trial: Trial) -> list[Rescore]:
    return list(trial.rescores.select_related("inputs").order_by("-created_at", "-pk"))
