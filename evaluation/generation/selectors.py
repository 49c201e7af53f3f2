"""What the generation pages and API read: a run with its searches and how far each got."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet

from candidates.curation.search_report import SearchGroup, SearchReport, search_report
from veriharm_site.paging import KeysFirst

from .models import GenerationRun, GenerationSearch, GenerationStep
from .states import SearchEnding, SearchStatus, StepKind


@dataclass(frozen=True)
class SearchRow:
    id: int
    agent: str
    source_task_id: str
    proposer: str
    status: str
    ending: str
    kept_iteration: int | None
    candidate_id: str
    steps: int
    error: str
    ending_label: str = ""


@dataclass(frozen=True)
class RunDetail:
    id: int
    name: str
    status: str
    budget: int
    perturbations: list[str]
    budget_usd: Decimal | None
    spent_usd: Decimal
    backend: str
    proposers: list[str]
    judges: list[str]
    reference_run: int | None
    note: str
    created_at: datetime
    finished_at: datetime | None
    cancelled_at: datetime | None
    searches: list[SearchRow]


def generation_run_detail(run_id: int) -> RunDetail | None:
    run = GenerationRun.objects.filter(pk=run_id).first()
    if run is None:
        return None
    searches = run.searches.select_related("agent").annotate(step_count=Count("steps")).order_by("pk")
    return RunDetail(
        id=run.pk,
        name=run.name,
        status=run.status,
        budget=run.budget,
        perturbations=list(run.perturbations),
        budget_usd=run.budget_usd,
        spent_usd=run.spent_usd,
        backend=run.backend,
        proposers=[c["name"] for c in run.proposer_configs],
        judges=[c["name"] for c in run.judge_configs],
        reference_run=run.reference_run_id,
        note=run.note,
        created_at=run.created_at,
        finished_at=run.finished_at,
        cancelled_at=run.cancelled_at,
        searches=[
            SearchRow(
                id=s.pk,
                agent=s.agent.name,
                source_task_id=s.source_task_id,
                proposer=s.proposer,
                status=s.status,
                ending=s.ending,
                kept_iteration=s.kept_iteration,
                candidate_id=s.candidate_external_id,
                steps=s.step_count,
                error=s.error[-2000:],
                ending_label=s.get_ending_display() if s.ending else "",
            )
            for s in searches
        ],
    )


# The pages: a list of runs, a run with its progress and Table 1, a search step by step.


def generation_runs() -> QuerySet[GenerationRun]:
    """Every run, newest first, with its searches counted (`search_count`, `finished_count`,
    `kept_count`): a queryset, so a page of it reads only that page."""
    return (
        GenerationRun.objects.select_related("created_by")
        .annotate(
            search_count=Count("searches", distinct=True),
            finished_count=Count("searches", filter=Q(searches__status=SearchStatus.FINISHED), distinct=True),
            kept_count=Count("searches", filter=Q(searches__ending=SearchEnding.KEPT), distinct=True),
        )
        .order_by("-created_at", "-pk")
    )


@dataclass(frozen=True)
class EndingCount:
    ending: str
    label: str
    count: int


@dataclass(frozen=True)
class RunProgress:
    status: str
    status_label: str
    total: int
    done: int
    running: int
    queued: int
    kept: int
    budget_usd: Decimal | None
    spent_usd: Decimal
    endings: list[EndingCount]

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100

    @property
    def usd_percent(self) -> int | None:
        if not self.budget_usd:
            return None
        return min(100, round(100 * self.spent_usd / self.budget_usd))

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "status_label": self.status_label,
            "total": self.total,
            "done": self.done,
            "running": self.running,
            "queued": self.queued,
            "kept": self.kept,
            "percent": self.percent,
            "spent_usd": str(self.spent_usd),
            "budget_usd": None if self.budget_usd is None else str(self.budget_usd),
            "endings": {e.ending: e.count for e in self.endings},
        }


def _progress_of(run: GenerationRun, counts: Sequence[Mapping[str, Any]]) -> RunProgress:
    """The progress from the run's searches counted by status and ending (and perhaps more)."""
    by_status: dict[str, int] = {}
    by_ending: dict[str, int] = {}
    for row in counts:
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["n"]
        if row["ending"]:
            by_ending[row["ending"]] = by_ending.get(row["ending"], 0) + row["n"]
    return RunProgress(
        status=run.status,
        status_label=run.get_status_display(),
        total=sum(by_status.values()),
        done=by_status.get(SearchStatus.FINISHED, 0),
        running=by_status.get(SearchStatus.RUNNING, 0),
        queued=by_status.get(SearchStatus.QUEUED, 0),
        kept=by_ending.get(SearchEnding.KEPT, 0),
        budget_usd=run.budget_usd,
        spent_usd=run.spent_usd,
        endings=[EndingCount(e.value, e.label, by_ending.get(e.value, 0)) for e in SearchEnding],
    )


def generation_run_progress(run_id: int) -> RunProgress | None:
    run = GenerationRun.objects.filter(pk=run_id).first()
    if run is None:
        return None
    return _progress_of(run, list(run.searches.values("status", "ending").annotate(n=Count("pk")).order_by()))


@dataclass(frozen=True)
class IterationCount:
    iteration: int
    rollouts: int  # proposals that reached a rollout at this iteration
    task_passed: int
    harm_detected: int
    successes: int  # harmful successes (both)


@dataclass(frozen=True)
class RunPage:
    run: GenerationRun
    proposers: list[str]
    judges: list[str]
    progress: RunProgress
    # Table 1 over this run's searches that ended by the method (kept, or the budget spent).
    report: SearchReport
    iterations: list[IterationCount]


def _report_groups(run: GenerationRun, counts: Sequence[Mapping[str, Any]]) -> list[SearchGroup]:
    """The searches Table 1 counts, as the search record stores them (`recording.pipeline_lines`):
    the ones that ended kept or with their budget spent. A kept search's first harmful success is
    its kept iteration (the search keeps the first one), so the database groups them: a few rows
    for thousands of searches, not every step."""
    return [
        SearchGroup(
            proposer=g["proposer"],
            target_agent=g["agent__name"],
            budget=run.budget,
            first_success=g["kept_iteration"] if g["ending"] == SearchEnding.KEPT else None,
            searches=g["n"],
        )
        for g in counts
        if g["ending"] in (SearchEnding.KEPT, SearchEnding.BUDGET_EXHAUSTED)
    ]


def generation_run_page(run_id: int) -> RunPage | None:
    """The run's figures: progress, Table 1, rollouts per iteration. Its searches are read a page
    at a time (`generation_run_searches`)."""
    run = GenerationRun.objects.select_related("created_by").filter(pk=run_id).first()
    if run is None:
        return None
    # The searches counted once, by what both the progress and Table 1 read.
    counts = list(
        run.searches.values("status", "ending", "kept_iteration", "proposer", "agent__name")
        .annotate(n=Count("pk"))
        .order_by()
    )
    rollouts = (
        GenerationStep.objects.filter(search__run=run, kind=StepKind.ROLLOUT)
        .values("iteration")
        .annotate(
            n=Count("pk"),
            task=Count("pk", filter=Q(r_task=1)),
            harm=Count("pk", filter=Q(r_harm=1)),
            both=Count("pk", filter=Q(r_task=1, r_harm=1)),
        )
        .order_by()
    )
    none = {"n": 0, "task": 0, "harm": 0, "both": 0}
    by_iteration: dict[int, dict[str, int]] = {
        r["iteration"]: {"n": r["n"], "task": r["task"], "harm": r["harm"], "both": r["both"]} for r in rollouts
    }
    iterations = [
        IterationCount(
            iteration=k, rollouts=row["n"], task_passed=row["task"], harm_detected=row["harm"], successes=row["both"]
        )
        for k in range(1, run.budget + 1)
        for row in [by_iteration.get(k, none)]
    ]
    return RunPage(
        run=run,
        proposers=[c["name"] for c in run.proposer_configs],
        judges=[c["name"] for c in run.judge_configs],
        progress=_progress_of(run, counts),
        report=search_report(_report_groups(run, counts)),
        iterations=iterations,
    )


def _with_step_counts(page: QuerySet[GenerationSearch]) -> QuerySet[GenerationSearch]:
    return page.annotate(step_count=Count("steps"))


def generation_run_searches(run_id: int) -> KeysFirst[GenerationSearch]:
    """The run's searches in the order they were launched, to page through: steps are counted for
    the page's searches only."""
    searches = GenerationSearch.objects.filter(run_id=run_id).select_related("agent").order_by("pk")
    return KeysFirst(searches.defer("source_task", "agent_config", "agent__config"), rows=_with_step_counts)


@dataclass(frozen=True)
class CandidateSearch:
    """The generation search a candidate was kept from, for its page."""

    search_id: int
    run_id: int
    run_name: str
    iteration: int | None


def candidate_search(external_id: str) -> CandidateSearch | None:
    search = (
        GenerationSearch.objects.select_related("run")
        .filter(candidate_external_id=external_id, ending=SearchEnding.KEPT)
        .first()
    )
    if search is None:
        return None
    return CandidateSearch(search.pk, search.run_id, search.run.name, search.kept_iteration)
