"""Template tags that show evaluation results on other apps' pages, so those apps never import this one.

    {% load evaluation_results %}
    {% candidate_evaluation_panel candidate %}      the candidate page's panel
    {% harm_results results %}                      one candidate's latest (r_task, r_harm) per agent,
                                                    `results` from latest_results_for_candidates()
    {% reference_checks_for rows as checks %}       the reference checks of a page of candidates (one query)
    {% reference_flag candidate_pk checks %}         "flagged" when its tests failed their reference check
    {% outcome_badge trial.outcome %}                a run's V3AST label (empty: no label yet)
    {{ sd|points }}                                  a spread of shares in percentage points
"""
from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from .. import rescoring, selectors
from ..v3ast.scoring import LABELS
from ..v3ast.charts import percentage_points

register = template.Library()


@register.inclusion_tag("evaluation/_candidate_panel.html", takes_context=True)
def candidate_evaluation_panel(context: template.Context, candidate: Any) -> dict[str, Any]:
    user = context["request"].user
    if not user.has_perm("evaluation.view_evaluations"):
        return {"hidden": True}
    return {
        "candidate": candidate,
        "latest": selectors.latest_results_for_candidates([candidate.pk])[candidate.pk],
        "history": list(selectors.candidate_trial_history(candidate.pk)),
        "check": selectors.reference_check_for(candidate.pk),
        "rescores": rescoring.candidate_rescores(candidate.pk),
        "rescorable": rescoring.rescorable_count(candidate),
        "can_run": user.has_perm("evaluation.run_evaluations"),
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("evaluation/_harm_results.html")
def harm_results(results: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {"results": results or []}


@register.inclusion_tag("evaluation/_result.html")
def trial_result(trial: Any) -> dict[str, Any]:
    return {"r": {"r_task": trial.r_task, "r_harm": trial.r_harm, "stale": trial.stale}}


@register.simple_tag
def reference_checks_for(rows: Any) -> dict[int, Any]:
    """`rows`: candidates, or dicts holding one under "candidate" (as the ranking's rows do)."""
    pks = []
    for row in rows or []:
        candidate = row.get("candidate") if isinstance(row, dict) else row
        pks.append(getattr(candidate, "pk", candidate))
    return selectors.reference_checks(pks)


@register.simple_tag
def reference_flag(candidate_pk: int, checks: dict[int, Any]) -> str:
    """'flagged' when this candidate's current tests failed their reference check, else ''."""
    check = (checks or {}).get(candidate_pk)
    return "flagged" if check is not None and check.verdict == "flagged" else ""


@register.simple_tag
def harm_summaries_for_pks(*candidate_pks: int) -> dict[int, dict[str, Any]]:
    """What the harm tests say of these candidates (see selectors.harm_test_summaries)."""
    return selectors.harm_test_summaries(list(candidate_pks))


@register.simple_tag
def harm_summaries_for_rows(rows: Any) -> dict[int, dict[str, Any]]:
    """The same for rows that carry a `candidate_pk` (a study's item rows)."""
    return selectors.harm_test_summaries([row.candidate_pk for row in rows])


@register.simple_tag
def study_rows_shown(rows: Any, summaries: dict[int, dict[str, Any]] | str, disagree_only: Any) -> list[Any]:
    """All rows, or with `disagree_only` those where humans' Valid_agg and the tests' own verdict differ."""
    if not disagree_only or not summaries:
        return list(rows)
    return [row for row in rows if selectors.disagrees_with_humans(row.valid_agg, summaries[row.candidate_pk])]


@register.simple_tag
def outcome_badge(outcome: str | None, title: str = "") -> SafeString:
    """A V3AST label as a coloured badge; a run without one (queued, running, cancelled) says so."""
    if not outcome:
        # format_html insists on arguments (Django 6): a fixed fragment is simply safe.
        return mark_safe('<span class="label label-pending" data-outcome="">no label yet</span>')
    value = str(outcome)
    return format_html('<span class="label label-{}" data-outcome="{}" title="{}">{}</span>', value, value, title,
                       LABELS.get(value, value))


@register.filter
def points(value: float | None) -> str:
    return percentage_points(value)
