"""Writes to the candidate pool: import (all-or-nothing, `candidates.importing`) and export of the
pipeline format."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

from .importing import ImportRefused, ImportSummary, Progress, candidate_import, candidate_import_lines
from .importing.rows import source_task_content
from .models import SCORE_KEYS, Candidate, Search
from .pipeline import format as fmt
from .synthetic import candidates_mark_synthetic

__all__ = [
    "ImportRefused",
    "ImportSummary",
    "Progress",
    "candidate_import",
    "candidate_import_files",
    "candidate_import_lines",
    "candidate_to_record",
    "candidates_mark_demo",
    "pipeline_export_lines",
    "search_to_record",
]


def candidate_import_files(
    paths: Iterable[str], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    def lines() -> Iterator[tuple[fmt.Location, str | bytes]]:
        for path in paths:
            with open(path, "rb") as handle:
                yield from fmt.iter_lines(handle, str(path))

    return candidate_import_lines(lines(), replace=replace, progress=progress)


def candidate_to_record(candidate: Candidate) -> dict[str, Any]:
    """The normalised pipeline record of a stored candidate (judgements prefetched)."""
    task = candidate.source_task
    return {
        "kind": "candidate",
        "id": candidate.external_id,
        "source_task": source_task_content(task),
        "instruction": candidate.instruction,
        "harm_test": candidate.harm_test,
        "perturbation": candidate.perturbation,
        "provenance": {
            "target_agent": candidate.target_agent,
            "proposer": candidate.proposer,
            "iteration": candidate.iteration,
        },
        "judgements": [
            {"judge": j.judge, "scores": {k: getattr(j, k) for k in SCORE_KEYS}, "rationale": j.rationale}
            for j in sorted(candidate.judgements.all(), key=lambda j: j.position)
        ],
        "harm_summary": candidate.harm_summary,
        "risk_category": candidate.risk_category,
        "references": candidate.references,
        "twin": candidate.twin,
        "extra": candidate.extra,
    }


def search_to_record(search: Search) -> dict[str, Any]:
    return {
        "kind": "search",
        "source_task_id": search.source_task_external_id,
        "target_agent": search.target_agent,
        "proposer": search.proposer,
        "budget": search.budget,
        "attempts": [
            {"iteration": a.iteration, "task_passed": a.task_passed, "harm_detected": a.harm_detected}
            for a in sorted(search.attempts.all(), key=lambda a: a.iteration)
        ],
        # No query without a candidate: the foreign key's descriptor answers None from the id.
        "candidate_id": search.candidate.external_id if search.candidate is not None else None,
    }


def pipeline_export_lines(
    candidates: QuerySet[Candidate] | None = None, *, include_searches: bool = True
) -> Iterator[str]:
    """Every candidate (then every search) as lines of the pipeline format, streamed."""
    queryset = candidates if candidates is not None else Candidate.objects.all()
    queryset = queryset.select_related("source_task").prefetch_related("judgements").order_by("external_id")
    for candidate in queryset.iterator(chunk_size=1000):
        yield fmt.to_line(candidate_to_record(candidate)) + "\n"
    if include_searches:
        searches = Search.objects.select_related("candidate").prefetch_related("attempts")
        for search in searches.iterator(chunk_size=1000):
            yield fmt.to_line(search_to_record(search)) + "\n"


def candidates_mark_demo(external_ids: Iterable[str]) -> int:
    """Mark the candidates `manage.py load_demo` made as synthetic (`candidates.synthetic`: their
    pages say their judge scores and Q are generated); returns how many are marked now. Idempotent."""
    return candidates_mark_synthetic(external_ids)
