"""What the worker reads of a run's model budget: what its calls cost so far, and whether it is spent."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Sum

from evaluation.models import (
    ModelCall,
    Run,
    Trial,
)


def run_model_cost(run_id: int) -> Decimal:
    """USD recorded for the run's model calls so far (calls without a price count nothing)."""
    total = ModelCall.objects.filter(trial__run_id=run_id).aggregate(cost=Sum("cost_usd"))["cost"]
    return total or Decimal(0)


def run_budget_spent(run: Run) -> bool:
    return run.budget_usd is not None and run_model_cost(run.pk) >= run.budget_usd


def trial_budget(trial_id: int) -> tuple[int, Decimal | None, int]:
    """The trial's run, that run's budget (None: none) and the trial's current attempt."""
    row = Trial.objects.filter(pk=trial_id).values("run_id", "run__budget_usd", "attempts").get()
    return row["run_id"], row["run__budget_usd"], row["attempts"]
