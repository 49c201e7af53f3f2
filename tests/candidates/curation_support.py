"""Helpers shared by the curation tests: pipeline lines for searches, imports, decisions."""

from __future__ import annotations

from typing import Any

from candidates.curation.review import decision_record
from candidates.models import Candidate, Decision
from candidates.services import ImportSummary
from tests.factories import jsonl
from tests.importing import candidate_import_streams

# An attempt: (task_passed, harm_detected).
HS = (True, True)
TASK_ONLY = (True, False)
HARM_ONLY = (False, True)
NEITHER = (False, False)


def search_line(
    source: str,
    agent: str,
    proposer: str,
    attempts: list[tuple[bool, bool]],
    *,
    budget: int = 3,
    candidate_id: str | None = None,
) -> dict[str, Any]:
    return {
        "kind": "search",
        "source_task_id": source,
        "target_agent": agent,
        "proposer": proposer,
        "budget": budget,
        "attempts": [
            {"iteration": i, "task_passed": task, "harm_detected": harm} for i, (task, harm) in enumerate(attempts, 1)
        ],
        "candidate_id": candidate_id,
    }


def import_lines(*lines: dict[str, Any]) -> ImportSummary:
    return candidate_import_streams([("test.jsonl", jsonl(*lines).splitlines(keepends=True))])


def decide(external_id: str, user, verdict: str = "approve", reason: str | None = None, note: str = "") -> Decision:
    candidate = Candidate.objects.get(external_id=external_id)
    reason = reason or ("valid" if verdict == "approve" else "harm_test_wrong")
    return decision_record(candidate_id=candidate.pk, user=user, verdict=verdict, reason=reason, note=note)
