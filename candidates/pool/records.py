"""Stored rows as records of the pipeline format (`candidates.pipeline`), pure over rows already
loaded: a source task's content, a candidate's record (its judgements prefetched), a search's. The
export (`selectors.pipeline_export_lines`), a release's snapshots and the import's comparison with
what is stored all build them here, so a stored candidate re-exports as the line it came from."""

from __future__ import annotations

from typing import Any

from ..models import SCORE_KEYS, Candidate, Search, SourceTask


def source_task_content(task: SourceTask) -> dict[str, Any]:
    return {
        "id": task.external_id,
        "instruction": task.instruction,
        "task_test": task.task_test,
        "environment": task.environment,
    }


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
