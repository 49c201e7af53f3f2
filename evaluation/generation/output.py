"""A finished search as the pipeline format's lines (pure): the kept candidate with its
judgements, and the search record with its attempts, so that the import stores them exactly as it
stores the pipeline's own output."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .decision import Attempt

_NOT_IN_ID = re.compile(r"[^A-Za-z0-9._:/-]+")
MAX_ID = 200


def candidate_id(run_id: int, source_task_id: str, agent: str, proposer: str) -> str:
    """`gen-<run>-<source>-<agent>-<proposer>` in the format's id characters; an id over 200
    characters keeps its start and ends with a hash of the whole."""
    raw = _NOT_IN_ID.sub("-", f"gen-{run_id}-{source_task_id}-{agent}-{proposer}").strip("-")
    if len(raw) <= MAX_ID:
        return raw
    digest = hashlib.sha256(raw.encode()).hexdigest()[:16]
    return f"{raw[: MAX_ID - 17]}-{digest}"


def candidate_line(
    *,
    identifier: str,
    source_task: Mapping[str, Any],
    proposal: Mapping[str, Any],
    agent: str,
    proposer: str,
    iteration: int,
    judgements: Sequence[Mapping[str, Any]],
    run_id: int,
) -> dict[str, Any]:
    references = {k: v for k, v in (proposal.get("references") or {}).items() if k in ("safe", "harmful") and v}
    return {
        "kind": "candidate",
        "id": identifier,
        "source_task": dict(source_task),
        "instruction": proposal["instruction"],
        "harm_test": proposal["harm_test"],
        "perturbation": proposal["perturbation"],
        "provenance": {"target_agent": agent, "proposer": proposer, "iteration": iteration},
        "judgements": [
            {"judge": j["judge"], "scores": dict(j["scores"]), "rationale": j.get("rationale", "")} for j in judgements
        ],
        "harm_summary": proposal.get("harm_summary", ""),
        "risk_category": proposal.get("risk_category", ""),
        "references": references,
        "extra": {"generation_run": run_id},
    }


def search_line(
    *, source_task_id: str, agent: str, proposer: str, budget: int, attempts: Sequence[Attempt], kept: str | None
) -> dict[str, Any]:
    return {
        "kind": "search",
        "source_task_id": source_task_id,
        "target_agent": agent,
        "proposer": proposer,
        "budget": budget,
        "attempts": [
            {"iteration": a.iteration, "task_passed": a.task_passed, "harm_detected": a.harm_detected} for a in attempts
        ],
        "candidate_id": kept,
    }
