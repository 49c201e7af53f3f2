"""The reads of a candidate's results: each agent's latest result, its trial history, its reference
check, and what the candidates app asks through its hooks (flags, harm-test verdicts, reference states)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import F, QuerySet

from candidates.hooks.harm_test_verdicts import AgentResult, HarmTestVerdict, ReferenceState
from candidates.hooks.panels import panel_read
from evaluation.models import (
    ReferenceCheck,
    ReferenceVerdict,
    Trial,
    TrialKind,
    TrialStatus,
)
from evaluation.results.reference_state import reference_next_step, reference_state, reference_state_detail
from evaluation.runs.model_usage import with_model_usage
from evaluation.runs.selectors import INPUT_TEXTS
from veriharm_site.any_of import AnyOf
from veriharm_site.distinct_on import first_of_each

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _CurrentRevision(TypedDict):
    current_revision: int


def _latest_done_trials(candidate_ids: list[int]) -> list[WithAnnotations[Trial, _CurrentRevision]]:
    # Risk trials only: a twin's result says nothing about the candidate's harm. DISTINCT ON reads
    # each (candidate, agent)'s trials once, where a correlated "is it the latest" subquery per trial
    # read them once per trial.
    # Only what a result shows: the sort behind DISTINCT ON carries every selected column of
    # every trial of these candidates, and a trial's outputs can be long.
    ordered = (
        Trial.objects.filter(candidate_id__in=candidate_ids, status=TrialStatus.DONE, kind=TrialKind.RISK)
        .order_by("candidate_id", "agent_id", "-finished_at", "-pk")
        .select_related("agent")
        .only(
            "candidate_id",
            "agent__name",
            "agent__model",
            "agent__harness",
            "r_task",
            "r_harm",
            "candidate_revision",
            "finished_at",
        )
        .annotate(current_revision=F("candidate__revision"))
    )
    latest = first_of_each(ordered, ("candidate_id", "agent_id"), key=lambda t: (t.candidate_id, t.agent_id))
    return sorted(latest, key=lambda trial: (trial.candidate_id, trial.agent.name))


def latest_results_for_candidates(candidate_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Per candidate, each agent's latest finished (r_task, r_harm), and whether it is stale.

    {candidate_pk: [{"agent": name, "model", "harness", "r_task", "r_harm", "stale", "trial": pk,
    "finished_at"}, ...]}, agents by name; candidates never evaluated map to [].
    """
    results: dict[int, list[dict[str, Any]]] = {pk: [] for pk in candidate_ids}
    for trial in _latest_done_trials(list(candidate_ids)):
        results[trial.candidate_id].append(
            {
                "agent": trial.agent.name,
                "model": trial.agent.model,
                "harness": trial.agent.harness,
                "r_task": trial.r_task,
                "r_harm": trial.r_harm,
                "stale": trial.candidate_revision != trial.current_revision,
                "trial": trial.pk,
                "finished_at": trial.finished_at,
            }
        )
    return results


def harm_observed(results: list[dict[str, Any]]) -> bool | None:
    """Whether any agent's current (non-stale) latest result shows a harmful success; None without results."""
    current = [r for r in results if not r["stale"]]
    if not current:
        return None
    return any(r["r_task"] == 1 and r["r_harm"] == 1 for r in current)


def harm_test_summaries(candidate_ids: list[int]) -> dict[int, dict[str, Any]]:
    """What the harm tests say of each candidate, to set beside human verdicts.

    {pk: {"results": latest_results_for_candidates(...)[pk], "harm_observed": harm_observed(...),
    "tests_valid": True (checked: discriminates) | False (checked: does not) | None (not checked)}},
    the reference check read by `reference_state`.
    """
    results = latest_results_on_page(candidate_ids)
    checks = reference_checks_on_page(candidate_ids)
    return {
        pk: {
            "results": results[pk],
            "harm_observed": harm_observed(results[pk]),
            "tests_valid": reference_state(checks.get(pk)).tests_valid,
        }
        for pk in candidate_ids
    }


def disagrees_with_humans(human_valid: bool | None, summary: dict[str, Any]) -> bool:
    """Humans' majority verdict on a candidate's validity against its harm tests' own verdict.

    The reference check is the tests' verdict on themselves: V_harm fires on the harmful reference
    and not on the safe one (criterion (i) of the judges, (iii) of the annotators). Both must be
    decided to disagree.
    """
    tests_valid = summary.get("tests_valid")
    return human_valid is not None and tests_valid is not None and human_valid != tests_valid


def candidate_trial_history(candidate_id: int, limit: int = 200) -> QuerySet[Trial]:
    return with_model_usage(
        Trial.objects.filter(candidate_id=candidate_id)
        .select_related("agent", "run", "candidate", "inputs")
        .defer(
            "agent_output", "task_output", "harm_output", "candidate__instruction", "candidate__harm_test", *INPUT_TEXTS
        )
    ).order_by("-queued_at", "-pk")[:limit]


# What a candidate page's history table shows of each trial (and `Trial.stale` reads).
HISTORY_FIELDS = (
    "run_id",
    "run__name",
    "agent__name",
    "kind",
    "repetition",
    "candidate_revision",
    "candidate__revision",
    "status",
    "outcome",
    "r_task",
    "r_harm",
)


def candidate_trial_history_rows(candidate_id: int, limit: int = 200) -> list[Trial]:
    """The candidate's trials, newest first, with only what its page's history table shows: no
    model usage summed, no inputs, no outputs (the API's history has them all)."""
    return list(
        Trial.objects.filter(candidate_id=candidate_id)
        .select_related("agent", "run", "candidate")
        .only(*HISTORY_FIELDS)
        .order_by("-queued_at", "-pk")[:limit]
    )


CHECK_FIELDS = tuple(field.name for field in ReferenceCheck._meta.concrete_fields)


def reference_checks(candidate_ids: list[int]) -> dict[int, ReferenceCheck]:
    """The reference check of each candidate's current revision (absent: never checked). Its trials
    are left unread: pages and API show their ids, which the check holds."""
    checks = (
        ReferenceCheck.objects.filter(candidate_id__in=candidate_ids, candidate_revision=F("candidate__revision"))
        .select_related("candidate")
        # `reference_state` reads the candidate's scripts; its texts stay unread.
        .only(*CHECK_FIELDS, "candidate__references", "candidate__revision")
    )
    return {check.candidate_id: check for check in checks}


def latest_results_on_page(candidate_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """`latest_results_for_candidates`, read once by all the panels of a candidate's page."""
    ids = list(candidate_ids)
    return panel_read(("evaluation.latest_results", tuple(ids)), lambda: latest_results_for_candidates(ids))


def reference_checks_on_page(candidate_ids: list[int]) -> dict[int, ReferenceCheck]:
    """`reference_checks`, read once by all the panels of a candidate's page."""
    ids = list(candidate_ids)
    return panel_read(("evaluation.reference_checks", tuple(ids)), lambda: reference_checks(ids))


def reference_states(candidate_ids: list[int]) -> dict[int, ReferenceState]:
    """`reference_state` of each candidate's current check, for `candidates.hooks.harm_test_verdicts` (read
    once with the panels where the page shares its reads)."""
    checks = reference_checks_on_page(candidate_ids)
    return {pk: reference_state(checks.get(pk)) for pk in candidate_ids}


def reference_check_for(candidate_id: int) -> ReferenceCheck | None:
    return reference_checks([candidate_id]).get(candidate_id)


def flagged_candidate_ids() -> set[int]:
    """Candidates whose current tests failed their reference check: a test passes on the untouched
    environment, or the tests do not discriminate."""
    return set(
        ReferenceCheck.objects.filter(
            verdict=ReferenceVerdict.FLAGGED, candidate_revision=F("candidate__revision")
        ).values_list("candidate_id", flat=True)
    )


def candidate_flag_reasons(candidate_ids: list[int]) -> dict[int, list[str]]:
    """What is wrong with the current tests of each flagged candidate among these, in words
    (`ReferenceCheck.flag_reasons`); candidates that are not flagged are absent."""
    checks = ReferenceCheck.objects.filter(
        AnyOf("candidate_id", candidate_ids),  # the review queue asks for its whole top-K
        candidate_revision=F("candidate__revision"),
        verdict=ReferenceVerdict.FLAGGED,
    ).only("candidate_id", "harm_passes_untouched", "task_passes_untouched", "does_not_discriminate")
    return {check.candidate_id: check.flag_reasons for check in checks.order_by()}


def harm_test_verdicts(candidate_ids: list[int]) -> dict[int, HarmTestVerdict]:
    """harm_test_summaries as read models, for `candidates.hooks.harm_test_verdicts` (registered in ready())."""
    checks = reference_checks_on_page(candidate_ids)
    return {
        pk: HarmTestVerdict(
            results=tuple(
                AgentResult(
                    agent=r["agent"],
                    model=r["model"],
                    harness=r["harness"],
                    r_task=r["r_task"],
                    r_harm=r["r_harm"],
                    stale=r["stale"],
                    trial=r["trial"],
                )
                for r in summary["results"]
            ),
            harm_observed=summary["harm_observed"],
            reference=reference_state(checks.get(pk)),
            reference_detail=reference_state_detail(checks.get(pk)),
            reference_next_step=reference_next_step(checks.get(pk)),
        )
        for pk, summary in harm_test_summaries(candidate_ids).items()
    }
