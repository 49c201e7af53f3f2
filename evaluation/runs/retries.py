"""Retrying the trials of a run that ended without a verdict, as new trials of the same run.

A finished trial never changes (database triggers), so a retry is a new row in the same slot
(run, candidate, agent, kind, repetition) with the same pinned inputs and agent configuration,
pointing at the trial it retries; the old one stays readable as history. Each slot counts once,
by its latest trial (`models.CURRENT`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from evaluation.agents.sandbox_status import runtimes_of, sandbox_status
from evaluation.models.taxonomy import NO_VERDICT_ENDS
from veriharm_site.refusals import Conflict, Refused

from ..models import CURRENT, Backend, Run, Trial, TrialStatus
from .launch import enqueue_trials

FIELD = "ends"


@dataclass(frozen=True)
class Retried:
    run: Run
    by_end: dict[str, int]  # every end asked for, with how many trials it retried
    trial_ids: list[int]  # the new trials


def retryable_counts(run: Run) -> dict[str, int]:
    """Per end without a verdict, how many of the run's current trials ended so (every end listed)."""
    counts = Counter(
        Trial.objects.filter(CURRENT, run=run, status=TrialStatus.UNRESOLVED).values_list("end", flat=True)
    )
    return {end: counts.get(end, 0) for end in NO_VERDICT_ENDS}


def _check_ends(ends: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(ends))
    if not wanted:
        raise Refused(FIELD, "choose at least one ending to retry")
    unknown = [end for end in wanted if end not in NO_VERDICT_ENDS]
    if unknown:
        shown = ", ".join(repr(end) for end in unknown)
        message = f"{shown} is not an ending without a verdict; retry one of {', '.join(NO_VERDICT_ENDS)}"
        raise Refused(FIELD, message)
    return wanted


def _check_runnable(run: Run) -> None:
    if run.imported:
        raise Conflict("an imported run's trials ran in another harness: they are not run again here")
    if run.cancelled:
        message = "the run is cancelled: its trials are not run again (a re-run starts a new run)"
        raise Conflict(message)
    waits = settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX and run.backend == Backend.LOCAL
    status = sandbox_status(runtimes_of(run.agents.all())) if waits else None
    if status is not None and not status.ready:
        message = status.refusal(run.backend)
        raise Conflict(message, field="backend")


def run_retry_unscored(run: Run, ends: Iterable[str]) -> Retried:
    """Queue a new trial beside each current trial of `run` that ended with one of `ends` (each an
    end without a verdict), and enqueue them on commit.

    Under the run's lock, only trials no retry has replaced are taken, so a second submit of the
    same form finds nothing left and is refused; the one-to-one `retry_of` is the database's
    guard. Scored trials are never touched. Raises Refused (a bad end) or Conflict (the run's state), writing nothing."""
    wanted = _check_ends(ends)
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        _check_runnable(locked)
        old = list(
            Trial.objects.filter(CURRENT, run=locked, status=TrialStatus.UNRESOLVED, end__in=wanted)
            .select_for_update(of=("self",))
            .order_by("pk")
        )
        if not old:
            message = f"no trial of this run ended as {', '.join(wanted)} without a retry already: nothing to retry"
            raise Conflict(message, field=FIELD)
        new = Trial.objects.bulk_create(
            [
                Trial(
                    run=locked,
                    candidate_id=trial.candidate_id,
                    agent_id=trial.agent_id,
                    kind=trial.kind,
                    repetition=trial.repetition,
                    candidate_revision=trial.candidate_revision,
                    inputs_id=trial.inputs_id,
                    agent_config=trial.agent_config,
                    agent_config_sha256=trial.agent_config_sha256,
                    retry_of=trial,
                    retry=trial.retry + 1,
                )
                for trial in old
            ]
        )
        enqueue_trials([t.pk for t in new], locked.backend)
    counted = Counter(trial.end for trial in old)
    return Retried(run=locked, by_end={end: counted.get(end, 0) for end in wanted}, trial_ids=[t.pk for t in new])
