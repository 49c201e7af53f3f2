"""The evaluation panel of a candidate's page, as a read model (registered in EvaluationConfig.ready)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from candidates.harm_test_verdicts import VIEW_PERMISSION
from candidates.models import Candidate
from candidates.panels import Panel

from . import rescoring, selectors
from .models import ReferenceCheck, Trial

RUN_PERMISSION = "evaluation.run_evaluations"


@dataclass(frozen=True)
class CandidateEvaluation:
    candidate: Candidate
    latest: list[dict[str, Any]]  # each agent's latest finished (r_task, r_harm)
    history: list[Trial]
    check: ReferenceCheck | None
    rescores: list[Any]
    rescorable: int
    can_run: bool


def candidate_evaluation_panel(candidate: Candidate, user: Any) -> Panel | None:
    """Shown to readers of evaluations (the rule of `candidates.harm_test_verdicts`), with re-run and
    re-score buttons for those who may run evaluations."""
    if not user.has_perm(VIEW_PERMISSION):
        return None
    return Panel(
        "evaluation/_candidate_panel.html",
        CandidateEvaluation(
            candidate=candidate,
            latest=selectors.latest_results_for_candidates([candidate.pk])[candidate.pk],
            history=selectors.candidate_trial_history_rows(candidate.pk),
            check=selectors.reference_check_for(candidate.pk),
            rescores=rescoring.candidate_rescores(candidate.pk),
            rescorable=rescoring.rescorable_count(candidate),
            can_run=user.has_perm(RUN_PERMISSION),
        ),
    )
