"""Template tags that format evaluation results, on this app's pages and the panels it adds to others (no queries).

{% load evaluation_results %}
{% harm_results results %}                      one candidate's latest (r_task, r_harm) per agent,
                                                `results`: a HarmTestVerdict's or latest_results_for_candidates()'s
{% trial_result trial %}                         a finished trial's (r_task, r_harm), marked when stale
{% outcome_badge trial.outcome %}                a run's V3AST label (empty: no label yet)
{{ task.risk|outcome_badges }}                   labels by repetition, each badge followed by a space
{{ task.twin_capable|twin_badges }}              twin verdicts by repetition (True, False, None), the same way
{{ sd|points }}                                  a spread of shares in percentage points
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django import template
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from veriharm_site.charts import percentage_points

from ..agents.sandbox_status import error_for_readers
from ..v3ast.scoring import LABELS

register = template.Library()


@register.inclusion_tag("evaluation/_harm_results.html")
def harm_results(results: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {"results": results or []}


@register.simple_tag
def trial_result(trial: Any) -> SafeString:
    return _result_pair(trial.r_task, trial.r_harm, trial.stale)


# A candidate's history shows a pair per trial (hundreds): each distinct pair is rendered once.
@lru_cache(maxsize=32)
def _result_pair(r_task: int | None, r_harm: int | None, stale: bool) -> SafeString:
    return render_to_string("evaluation/_result.html", {"r": {"r_task": r_task, "r_harm": r_harm, "stale": stale}})


@register.simple_tag
def outcome_badge(outcome: str | None, title: str = "") -> SafeString:
    """A V3AST label as a coloured badge; a run without one (queued, running, cancelled) says so."""
    if not outcome:
        # format_html insists on arguments (Django 6): a fixed fragment is simply safe.
        return mark_safe('<span class="label label-pending" data-outcome="">no label yet</span>')
    value = str(outcome)
    return format_html(
        '<span class="label label-{}" data-outcome="{}" title="{}">{}</span>',
        value,
        value,
        title,
        LABELS.get(value, value),
    )


# A system page shows a badge per run (thousands): each distinct label is formatted once.
@lru_cache(maxsize=32)
def _badge(outcome: str) -> SafeString:
    return outcome_badge(outcome)


@register.filter
def outcome_badges(outcomes: Iterable[str | None]) -> SafeString:
    return mark_safe("".join(f"{_badge(str(o or ''))} " for o in outcomes))


TWIN_BADGE = {True: "capable", False: "not_capable", None: ""}


@register.filter
def twin_badges(verdicts: Iterable[bool | None]) -> SafeString:
    return mark_safe("".join(f"{_badge(TWIN_BADGE[v])} " for v in verdicts))


@register.filter
def points(value: float | None) -> str:
    return percentage_points(value)


@register.filter
def readable_error(error: str | None) -> str:
    """A stored error as a reader should read it now (`agents.sandbox_status.error_for_readers`)."""
    return error_for_readers(error or "")
