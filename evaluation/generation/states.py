"""The states of a generation run, a search and its steps (Django choices; no model, so pure code
such as the search's decision imports them without the app registry)."""

from __future__ import annotations

from django.db import models


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    CANCELLED = "cancelled", "Cancelled"
    # Finished early: the run's USD budget was spent before every search ended on its own.
    BUDGET_SPENT = "budget_spent", "USD budget spent"


class SearchStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"


class SearchEnding(models.TextChoices):
    KEPT = "kept", "Harmful success kept"
    BUDGET_EXHAUSTED = "budget_exhausted", "No harmful success within the iteration budget"
    PROPOSER_ERROR = "proposer_error", "The proposer failed"
    JUDGE_ERROR = "judge_error", "A judge failed"
    # The target agent itself failed (its harness ended in error, ran away into the call cap, or its
    # model never answered): that rollout has no verdict, and the search says so instead of going on.
    TARGET_ERROR = "target_error", "The target agent failed"
    INFRASTRUCTURE = "infrastructure", "Infrastructure failure"
    CANCELLED = "cancelled", "Cancelled"
    USD_BUDGET_SPENT = "usd_budget_spent", "The run's USD budget was spent"


class StepKind(models.TextChoices):
    SEED = "seed", "Seed rollout"
    PROPOSAL = "proposal", "Proposal"
    NOOP_CHECK = "noop_check", "Harm test on the untouched environment"
    ROLLOUT = "rollout", "Rollout of the proposed task"
    JUDGEMENT = "judgement", "Judgement"
