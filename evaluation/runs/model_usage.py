"""Model usage through the gateway, as run and trial pages and the API show it: calls, tokens, cost,
retries, and what is left of a run's budget."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict, TypeGuard

from django.db.models import Count, Q, QuerySet, Sum

from evaluation.models import (
    ModelCall,
    Run,
    Trial,
)

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


# Aliases of their own: an aggregate named like the column it sums would shadow it in the filters.
USAGE_FIELDS = {
    "n_calls": Count("pk"),
    "sum_input": Sum("input_tokens"),
    "sum_output": Sum("output_tokens"),
    "sum_cost": Sum("cost_usd"),
    "sum_retries": Sum("retries"),
    "n_unpriced": Count("pk", filter=Q(cost_usd__isnull=True)),
}


def _usage(row: Mapping[str, Any] | None) -> dict[str, Any]:
    row = row or {}
    return {
        "calls": row.get("n_calls") or 0,
        "input_tokens": row.get("sum_input") or 0,
        "output_tokens": row.get("sum_output") or 0,
        "cost_usd": row.get("sum_cost") or Decimal(0),
        "retries": row.get("sum_retries") or 0,
        "unpriced_calls": row.get("n_unpriced") or 0,
    }


def trial_model_usage(trial_id: int) -> dict[str, Any]:
    """Calls, tokens, cost and retries of one trial, every attempt."""
    return _usage(ModelCall.objects.filter(trial_id=trial_id).aggregate(**USAGE_FIELDS))


def runs_model_usage(runs: list[Run]) -> dict[int, dict[str, Any]]:
    """Each run's model usage in all and per agent, with its budget and what is left of it, in one
    grouped query for all of them (a list of runs would otherwise ask three times per run)."""
    rows: dict[int, dict[str, dict[str, Any]]] = {run.pk: {} for run in runs}
    calls = ModelCall.objects.filter(trial__run__in=[run.pk for run in runs])
    for row in calls.values("trial__run_id", "trial__agent__name").annotate(**USAGE_FIELDS).order_by():
        rows[row["trial__run_id"]][row["trial__agent__name"]] = _usage(row)
    usage = {}
    for run in runs:
        per_agent = rows[run.pk]
        total = {key: sum((agent[key] for agent in per_agent.values()), _usage(None)[key]) for key in _usage(None)}
        budget = run.budget_usd
        usage[run.pk] = {
            **total,
            "budget_usd": budget,
            "budget_left_usd": None if budget is None else max(budget - total["cost_usd"], Decimal(0)),
            "budget_spent": budget is not None and total["cost_usd"] >= budget,
            "by_agent": [
                {"agent": agent.name, **per_agent.get(agent.name, _usage(None))}
                for agent in sorted(run.agents.all(), key=lambda a: a.name)
            ],
        }
    return usage


def run_model_usage(run: Run) -> dict[str, Any]:
    """The run's model usage in all and per agent, with its budget and what is left of it."""
    return runs_model_usage([run])[run.pk]


class ModelUsageAnnotations(TypedDict):
    model_calls_n: int
    tokens_in: int | None
    tokens_out: int | None
    cost: Decimal | None
    retries_n: int | None
    unpriced_n: int


def has_model_usage(trial: Trial) -> TypeGuard[WithAnnotations[Trial, ModelUsageAnnotations]]:
    """Whether `trial` came through with_model_usage: its totals are on it, no query needed."""
    return hasattr(trial, "model_calls_n")


def with_model_usage(trials: QuerySet[Trial]) -> QuerySet[Trial]:
    """Trials annotated with their model calls' totals (model_calls_n, tokens_in, tokens_out, cost)."""
    return trials.annotate(
        model_calls_n=Count("model_calls"),
        tokens_in=Sum("model_calls__input_tokens"),
        tokens_out=Sum("model_calls__output_tokens"),
        cost=Sum("model_calls__cost_usd"),
        retries_n=Sum("model_calls__retries"),
        unpriced_n=Count("model_calls", filter=Q(model_calls__cost_usd__isnull=True)),
    )
