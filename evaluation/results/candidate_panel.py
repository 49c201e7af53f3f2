"""The evaluation panel of a candidate's page, as a read model (registered in EvaluationConfig.ready)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from candidates.hooks.harm_test_verdicts import VIEW_PERMISSION, ReferenceState
from candidates.hooks.panels import Panel
from candidates.models import Candidate
from evaluation.models import ReferenceCheck, Trial
from evaluation.results import selectors
from evaluation.results.reference_state import reference_next_step, reference_state
from evaluation.trials import rescoring
from veriharm_site.url_filling import url_filler

RUN_PERMISSION = "evaluation.run_evaluations"


@dataclass(frozen=True)
class HistoryRow:
    trial: Trial
    url: str
    run_url: str


@dataclass(frozen=True)
class CandidateEvaluation:
    candidate: Candidate
    latest: list[dict[str, Any]]  # each agent's latest finished (r_task, r_harm)
    history: list[HistoryRow]
    check: ReferenceCheck | None
    reference: ReferenceState  # what the check established, as every page names it
    next_step: str  # while not checked: what checks it next, and who
    rescores: list[Any]
    rescorable: int
    can_run: bool


def candidate_evaluation_panel(candidate: Candidate, user: Any) -> Panel | None:
    """Shown to readers of evaluations (the rule of `candidates.hooks.harm_test_verdicts`), with re-run and
    re-score buttons for those who may run evaluations."""
    if not user.has_perm(VIEW_PERMISSION):
        return None
    trial_url, run_url = url_filler("evaluation:trial"), url_filler("evaluation:run")
    history = [
        HistoryRow(trial, trial_url(trial.pk), run_url(trial.run_id))
        for trial in selectors.candidate_trial_history_rows(candidate.pk)
    ]
    return Panel(
        "evaluation/_candidate_panel.html",
        CandidateEvaluation(
            candidate=candidate,
            # The human-verdicts panel reads these too (the harm tests beside the votes): once for both.
            latest=selectors.latest_results_on_page([candidate.pk])[candidate.pk],
            history=history,
            check=(check := selectors.reference_checks_on_page([candidate.pk]).get(candidate.pk)),
            reference=reference_state(check),
            next_step=reference_next_step(check),
            rescores=rescoring.candidate_rescores(candidate.pk),
            rescorable=rescoring.rescorable_count(candidate),
            can_run=user.has_perm(RUN_PERMISSION),
        ),
    )
