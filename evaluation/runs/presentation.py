"""Metrics as table rows for the pages: percentages with one decimal, each with its 95% interval and its
standard error clustered by candidate."""

from __future__ import annotations

from typing import Any

from evaluation.runs.metric_selectors import AgentMetrics
from evaluation.runs.metrics import METRICS, Metrics
from evaluation.runs.paired import Comparison
from veriharm_site.intervals import interval_text


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def metric_cells(values: Metrics | None) -> list[dict[str, str]]:
    if values is None:
        return []
    cells = []
    for name in METRICS:
        estimate = getattr(values, name)
        cells.append(
            {
                "name": name,
                "value": _percent(estimate.float_value),
                "interval": interval_text(estimate.ci),
                "se": "" if estimate.se is None or estimate.value is None else f"SE {estimate.se * 100:.1f}",
            }
        )
    return cells


def _row(label: str, values: Metrics | None, **extra: Any) -> dict[str, Any]:
    return {
        "label": label,
        "n_candidates": values.n_candidates if values else 0,
        "n_trials": values.n_trials if values else 0,
        "cells": metric_cells(values),
        **extra,
    }


def agent_rows(items: list[AgentMetrics]) -> list[dict[str, Any]]:
    return [
        _row(
            item.agent.name,
            item.overall,
            model=item.agent.model,
            harness=item.agent.harness,
            unresolved=item.unresolved,
            stale=item.stale,
            excluded=item.excluded_candidates,
        )
        for item in items
    ]


def breakdown_rows(item: AgentMetrics, which: str) -> list[dict[str, Any]]:
    groups = item.by_perturbation if which == "perturbation" else item.by_risk_category
    return [_row(name, values) for name, values in groups.items()]


def breakdown_tables(items: list[AgentMetrics]) -> list[dict[str, Any]]:
    return [
        {
            "agent": item.agent.name,
            "perturbation": breakdown_rows(item, "perturbation"),
            "risk_category": breakdown_rows(item, "risk_category"),
        }
        for item in items
    ]


def _points(value: float) -> str:
    # The sign always shows: which system is ahead is the point of the figure.
    return f"{value * 100:+.1f} pp".replace("-", "−")


def paired_rows(comparison: Comparison | None) -> list[dict[str, Any]]:
    """The paired differences as the comparison page shows them: shares, A − B in percentage points,
    its interval and, for binary pairs, McNemar's counts and p-value."""
    if comparison is None:
        return []
    rows = []
    for d in comparison.differences:
        test = d.mcnemar
        rows.append(
            {
                "metric": d.metric,
                "label": d.label,
                "a": _percent(float(d.a)),
                "b": _percent(float(d.b)),
                "difference": _points(float(d.value)),
                "interval": "" if d.ci is None else f"{_points(d.ci.low)} to {_points(d.ci.high)}",
                "excludes_zero": d.ci is not None and (d.ci.low > 0 or d.ci.high < 0),
                "mcnemar": None
                if test is None
                else {
                    "only_a": test.only_a,
                    "only_b": test.only_b,
                    "agree": test.both + test.neither,
                    "p_value": f"{test.p_value:.3g}",
                },
            }
        )
    return rows
