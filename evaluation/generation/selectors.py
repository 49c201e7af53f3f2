"""What the generation pages and API read: a run with its searches and how far each got."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count

from .models import GenerationRun


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
            )
            for s in searches
        ],
    )
