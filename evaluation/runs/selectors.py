"""The reads of a run's pages and API: the list of runs, one run, its agents, progress and trials."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from evaluation.models import (
    CURRENT,
    Agent,
    Run,
    TranscriptStep,
    Trial,
    TrialStatus,
    taxonomy,
)
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.model_usage import with_model_usage
from veriharm_site.paging import KeysFirst

# A list of trials shows each one's inputs digest, never the texts themselves.
INPUT_TEXTS = ("inputs__instruction", "inputs__task_test", "inputs__harm_test", "inputs__environment")


def runs_list() -> QuerySet[Run]:
    """Runs, newest first, for the runs page and the API alike: each with its trial counts by status
    and what its rows show (its creator, release and agents)."""
    # Each slot once: a trial a retry replaced is history, not a trial of the run's count.
    current = Q(trials__retried_by__isnull=True)
    counts = {
        f"n_{status}": Count("trials", filter=current & Q(trials__status=status)) for status in TrialStatus.values
    }
    return (
        Run.objects.select_related("created_by", "release")
        .prefetch_related("agents")
        .annotate(n_trials=Count("trials", filter=current), **counts)
        .order_by("-created_at", "-id")
    )


def run_found(pk: int) -> Run | None:
    """One run with what its page and API show (None: no such run; each says so its own way)."""
    return (
        Run.objects.select_related("created_by", "rerun_of", "release").prefetch_related("agents").filter(pk=pk).first()
    )


def agents_listed() -> QuerySet[Agent]:
    return Agent.objects.order_by("name")


def agent_ids_named(names_or_ids: list[str]) -> tuple[list[int], list[str]]:
    """The agents a request names, by id or by name, in its order; and the names that match none."""
    ids, unknown = [], []
    for value in names_or_ids:
        # isdecimal() alone accepts other scripts' digits ("٣") and isdigit() superscripts ("²"),
        # which int() or the database refuse: an id is ASCII digits.
        is_id = value.isascii() and value.isdecimal()
        agent = Agent.objects.filter(pk=int(value)).first() if is_id else None
        agent = agent or Agent.objects.filter(name=value).first()
        if agent is None:
            unknown.append(value)
        else:
            ids.append(agent.pk)
    return ids, unknown


def run_status(counts: dict[str, int], cancelled: bool) -> str:
    if cancelled and not counts.get(TrialStatus.RUNNING):
        return "cancelled"
    if not counts.get(TrialStatus.QUEUED) and not counts.get(TrialStatus.RUNNING):
        return "finished"
    if cancelled:
        return "cancelling"
    if counts.get(TrialStatus.RUNNING) or sum(counts.get(s, 0) for s in (TrialStatus.DONE, TrialStatus.UNRESOLVED)):
        return "running"
    return "queued"


def run_progress(run: Run, now: datetime | None = None) -> dict[str, Any]:
    """Counts by status, elapsed time and an estimate of the time left (seconds), of each slot's
    latest trial (`retried` counts the trials a retry replaced)."""
    now = now or timezone.now()
    retried = Trial.objects.filter(run=run, retried_by__isnull=False).count()
    rows = Trial.objects.filter(CURRENT, run=run).values("status", "end").annotate(n=Count("pk"))
    counts = {status: 0 for status in TrialStatus.values}
    ends = {end: 0 for end in TrialEnd.values}
    for row in rows:
        counts[row["status"]] += row["n"]
        if row["end"]:
            ends[row["end"]] += row["n"]
    total = sum(counts.values())
    status = run_status(counts, run.cancelled)
    last_finished = (
        Trial.objects.filter(run=run, finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("finished_at", flat=True)
        .first()
    )
    end = last_finished if status in ("finished", "cancelled") and last_finished else now
    elapsed = max((end - run.created_at).total_seconds(), 0.0)
    resolved = counts[TrialStatus.DONE] + counts[TrialStatus.UNRESOLVED]
    remaining = counts[TrialStatus.QUEUED] + counts[TrialStatus.RUNNING]
    eta = None
    if status in ("running", "queued") and resolved:
        # The rate so far, from the first start: queueing before the first worker picked up doesn't count.
        first_start = (
            Trial.objects.filter(run=run, started_at__isnull=False)
            .order_by("started_at")
            .values_list("started_at", flat=True)
            .first()
        )
        busy = max(((now - first_start).total_seconds() if first_start else elapsed), 1e-6)
        eta = remaining * busy / resolved
    return {
        "run": run.pk,
        "status": status,
        "total": total,
        "done": counts[TrialStatus.DONE],
        "running": counts[TrialStatus.RUNNING],
        "queued": counts[TrialStatus.QUEUED],
        "unresolved": counts[TrialStatus.UNRESOLVED],
        "cancelled": counts[TrialStatus.CANCELLED],
        "retried": retried,
        "ends": ends,
        "elapsed_seconds": round(elapsed, 1),
        "eta_seconds": None if eta is None else round(eta, 1),
        "percent": round(100 * (total - remaining) / total, 1) if total else 100.0,
    }


def run_stale_count(run: Run) -> int:
    """Trials of the run whose candidate has been revised since (their results are stale)."""
    return Trial.objects.filter(CURRENT, run=run).exclude(candidate_revision=F("candidate__revision")).count()


def trial_search(search: str) -> Q:
    """Trials whose candidate id, test or agent output, or one of whose steps holds `search`
    (case-insensitive). The steps are searched in a subquery, so a trial matching in many steps
    is listed once."""
    in_steps = TranscriptStep.objects.filter(trial=OuterRef("pk")).filter(
        Q(command__icontains=search) | Q(content__icontains=search)
    )
    return (
        Q(candidate__external_id__icontains=search)
        | Q(agent_output__icontains=search)
        | Q(task_output__icontains=search)
        | Q(harm_output__icontains=search)
        | Q(Exists(in_steps))
    )


def run_trials(run: Run, status: str = "", search: str = "") -> KeysFirst[Trial]:
    """The run's trials (of one status, when it names one; holding `search`, when there is one) in
    rank, agent and repetition order, each with its model usage, to page through: the usage is
    summed for the page's trials, not grouped over every trial of the run before the page is cut.
    Trials a retry replaced are listed too, each before its retry, with `retried_as` naming it."""
    queryset = (
        Trial.objects.filter(run=run)
        .annotate(retried_as=F("retried_by"))
        .select_related("candidate", "agent", "inputs")
        .defer(
            "agent_output",
            "task_output",
            "harm_output",
            "candidate__instruction",
            "candidate__harm_test",
            *INPUT_TEXTS,
        )
    )
    if status in TrialStatus.values:
        queryset = queryset.filter(status=status)
    if search:
        queryset = queryset.filter(trial_search(search))
    return KeysFirst(
        queryset.order_by("candidate__rank", "candidate__external_id", "agent__name", "kind", "repetition", "retry"),
        rows=with_model_usage,
    )


@dataclass(frozen=True)
class EndCount:
    end: str
    label: str
    meaning: str
    scored: bool
    count: int


def end_counts(progress: dict[str, Any]) -> list[EndCount]:
    """How the run's finished trials ended, every end listed, with how it counts."""
    return [
        EndCount(end, label, taxonomy.MEANING[end], end in taxonomy.VERDICT_ENDS, progress["ends"].get(end, 0))
        for end, label in TrialEnd.choices
    ]
