"""The reads of a trial's page and API: the trial with what it ran, its retry, its transcript to page
through and search, and its model calls."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from django.db.models import Q, QuerySet

from evaluation.models import (
    ModelCall,
    TranscriptStep,
    Trial,
)
from veriharm_site.paging import KeysFirst


def trial_found(pk: int) -> Trial | None:
    """A trial with what its detail serializes: its inputs, final state, steps and model calls."""
    return (
        Trial.objects.select_related("candidate", "agent", "inputs", "final_state")
        .prefetch_related("steps", "model_calls")
        .filter(pk=pk)
        .first()
    )


def trial_detail(pk: int) -> Trial:
    return Trial.objects.select_related("run__release", "agent", "candidate__source_task", "inputs", "final_state").get(
        pk=pk
    )


def trial_retry(trial: Trial) -> Trial | None:
    """The trial that retried this one, if any (the slot's record moved on to it)."""
    return Trial.objects.filter(retry_of=trial).only("pk", "status", "retry").first()


def trial_steps(trial: Trial) -> QuerySet[TranscriptStep]:
    return trial.steps.order_by("attempt", "index")


def transcript_steps(trial: Trial, search: str = "") -> KeysFirst[TranscriptStep]:
    """The trial's steps in order (those holding `search` in their command or output, when there
    is one), to page through by their keys."""
    queryset = trial.steps.order_by("attempt", "index")
    if search:
        queryset = queryset.filter(Q(command__icontains=search) | Q(content__icontains=search))
    return KeysFirst(queryset)


def transcript_positions(trial: Trial, steps: Iterable[TranscriptStep]) -> dict[int, int]:
    """Where each of `steps` sits in the trial's whole transcript (from 0), by its id: a step a
    search found links to the page it is on. One narrow read of the trial's step keys, from the
    index; counting the steps before each found one would read as many for every step."""
    order = list(trial.steps.order_by("attempt", "index").values_list("attempt", "index"))
    return {step.pk: bisect_left(order, (step.attempt, step.index)) for step in steps}


def transcript_length(trial: Trial) -> int:
    return trial.steps.count()


def trial_model_calls(trial: Trial) -> QuerySet[ModelCall]:
    return trial.model_calls.order_by("attempt", "created_at", "pk")
