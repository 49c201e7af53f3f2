"""What a generation run asked for and every step its searches took, as they happened.

A run holds one search per (target agent, source task, proposer). A search's steps are its
record: the seed rollout, then per iteration the proposal, the no-op check and the rollout, then
one judgement per judge of the kept candidate. The database holds the rules that make a step
exactly-once (one proposal, check and rollout per iteration, one judgement per judge, one kept
candidate), so a worker that resumes a search after another died can never record a step twice.

Imported by `evaluation.models` so that Django finds them; they name the agent model by string,
as this module is imported from there.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.model_ledger.calls import ModelCallFields

from .states import RunStatus, SearchEnding, SearchStatus, StepKind

# The sandbox backends a search's rollouts may run on (`evaluation.sandbox.registry`).
BACKENDS = ("local", "docker")
# The pipeline format's provenance iteration is 1-20.
MAX_BUDGET = 20


class GenerationRun(models.Model):
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # The selection as asked (ids, a seeded sample or a filter) and the source task ids it resolved to.
    selection = models.JSONField(default=dict)
    agents = models.ManyToManyField("evaluation.Agent", related_name="generation_runs")
    # Each config names its key by environment variable only (`api_key_env`), never the key.
    proposer_configs = models.JSONField(default=list)
    judge_configs = models.JSONField(default=list)
    budget = models.PositiveSmallIntegerField(default=5)
    perturbations = models.JSONField(default=list)
    budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    spent_usd = models.DecimalField(max_digits=12, decimal_places=4, default=Decimal(0))
    backend = models.CharField(max_length=20, default="local")
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.RUNNING)
    demo = models.BooleanField(default=False)
    # Whether the kept candidates get the reference check (an evaluation run of the reference
    # agents) once every search has ended, and the run launched for it.
    reference_check = models.BooleanField(default=True)
    reference_run = models.ForeignKey(
        "evaluation.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="generation_runs"
    )
    # What the run has to say beyond its searches (why its reference check was not launched).
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(budget__gte=1, budget__lte=MAX_BUDGET), name="generation_budget_in_range"
            ),
            models.CheckConstraint(
                condition=Q(budget_usd__isnull=True) | Q(budget_usd__gte=0), name="generation_usd_budget_not_negative"
            ),
            models.CheckConstraint(condition=Q(spent_usd__gte=0), name="generation_spent_not_negative"),
            models.CheckConstraint(condition=Q(backend__in=BACKENDS), name="generation_backend_known"),
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="generation_run_status_known"),
            models.CheckConstraint(
                condition=Q(status=RunStatus.RUNNING, finished_at__isnull=True)
                | (~Q(status=RunStatus.RUNNING) & Q(finished_at__isnull=False)),
                name="generation_run_finished_has_time",
            ),
            models.CheckConstraint(condition=~Q(name=""), name="generation_run_named"),
        ]

    def __str__(self) -> str:
        return self.name


class GenerationSearch(models.Model):
    """One (target agent, source task, proposer) search, held by a worker through a lease as a trial is."""

    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="searches")
    agent = models.ForeignKey("evaluation.Agent", on_delete=models.PROTECT, related_name="generation_searches")
    # The source task as the search uses it (pipeline format's source_task record), fixed at launch.
    source_task_id = models.CharField(max_length=200)
    source_task = models.JSONField()
    proposer = models.CharField(max_length=200)
    # The target agent as this search runs it, pinned at launch as a trial's is
    # (`agents.pinning.agent_pin`): editing the agent later changes no step of the search. Empty for
    # searches launched before searches were pinned, which run the agent as it is.
    agent_config = models.JSONField(default=dict, blank=True)
    agent_config_sha256 = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=20, choices=SearchStatus.choices, default=SearchStatus.QUEUED)
    ending = models.CharField(max_length=20, choices=SearchEnding.choices, blank=True)
    # The iteration whose rollout was the first harmful success, and the candidate stored from it.
    kept_iteration = models.PositiveSmallIntegerField(null=True, blank=True)
    candidate_external_id = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    lease_token = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Attempts at the search's current step that failed on infrastructure (bounded like a trial's).
    failures = models.PositiveSmallIntegerField(default=0)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "agent", "source_task_id", "proposer"], name="generation_one_search_per_tuple"
            ),
            models.UniqueConstraint(
                fields=["candidate_external_id"],
                condition=~Q(candidate_external_id=""),
                name="generation_candidate_kept_once",
            ),
            models.CheckConstraint(condition=Q(status__in=SearchStatus.values), name="generation_search_status_known"),
            models.CheckConstraint(
                condition=Q(ending="") | Q(ending__in=SearchEnding.values), name="generation_search_ending_known"
            ),
            models.CheckConstraint(
                condition=(Q(status=SearchStatus.FINISHED) & ~Q(ending="") & Q(finished_at__isnull=False))
                | (~Q(status=SearchStatus.FINISHED) & Q(ending="") & Q(finished_at__isnull=True)),
                name="generation_search_finished_has_ending",
            ),
            models.CheckConstraint(
                condition=Q(kept_iteration__isnull=True) | Q(kept_iteration__gte=1, kept_iteration__lte=MAX_BUDGET),
                name="generation_kept_iteration_in_range",
            ),
            models.CheckConstraint(
                condition=Q(ending=SearchEnding.KEPT, kept_iteration__isnull=False) | ~Q(ending=SearchEnding.KEPT),
                name="generation_kept_names_its_iteration",
            ),
            models.CheckConstraint(
                condition=Q(candidate_external_id="") | Q(ending=SearchEnding.KEPT),
                name="generation_only_kept_has_candidate",
            ),
            models.CheckConstraint(
                condition=Q(status=SearchStatus.RUNNING) | Q(lease_token=""), name="generation_lease_while_running"
            ),
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="generation_search_lease_idx")]

    def __str__(self) -> str:
        return f"{self.source_task_id} / {self.proposer}"


class GenerationStep(models.Model):
    """One step of a search, recorded once when it is done."""

    search = models.ForeignKey(GenerationSearch, on_delete=models.CASCADE, related_name="steps")
    kind = models.CharField(max_length=20, choices=StepKind.choices)
    # 0 for the seed rollout and the judgements; 1..budget for a proposal, its check and rollout.
    iteration = models.PositiveSmallIntegerField()
    judge = models.CharField(max_length=200, blank=True)
    # A proposal's (t~, V~_harm) and what came with it.
    instruction = models.TextField(blank=True)
    harm_test = models.TextField(blank=True)
    perturbation = models.CharField(max_length=40, blank=True)
    harm_summary = models.TextField(blank=True)
    risk_category = models.CharField(max_length=100, blank=True)
    references = models.JSONField(default=dict, blank=True)
    # Why a proposal or check does not go on (not a pytest module, passes untouched), in words.
    note = models.TextField(blank=True)
    error = models.TextField(blank=True)
    # A rollout's (or check's) trajectory and verdicts, and the sha256 of what it ran.
    transcript = models.TextField(blank=True)
    steps = models.JSONField(default=list, blank=True)
    r_task = models.PositiveSmallIntegerField(null=True, blank=True)
    r_harm = models.PositiveSmallIntegerField(null=True, blank=True)
    inputs_sha256 = models.CharField(max_length=64, blank=True)
    # The sandbox system and verifier (and a harness runtime) a rollout or check ran on, as for trials.
    system_identity = models.TextField(blank=True)
    scores = models.JSONField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    # Model calls of a proposer or judge (`contracts.ModelCallRecord`), none for scripted ones.
    calls = models.JSONField(default=list, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    budget_spent = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["search", "iteration", "pk"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=StepKind.values), name="generation_step_kind_known"),
            models.UniqueConstraint(
                fields=["search"], condition=Q(kind=StepKind.SEED), name="generation_one_seed_rollout"
            ),
            models.UniqueConstraint(
                fields=["search", "iteration"],
                condition=Q(kind=StepKind.PROPOSAL),
                name="generation_one_proposal_per_iteration",
            ),
            models.UniqueConstraint(
                fields=["search", "iteration"],
                condition=Q(kind=StepKind.NOOP_CHECK),
                name="generation_one_check_per_iteration",
            ),
            models.UniqueConstraint(
                fields=["search", "iteration"],
                condition=Q(kind=StepKind.ROLLOUT),
                name="generation_one_rollout_per_iteration",
            ),
            models.UniqueConstraint(
                fields=["search", "judge"],
                condition=Q(kind=StepKind.JUDGEMENT),
                name="generation_one_judgement_per_judge",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[StepKind.SEED, StepKind.JUDGEMENT], iteration=0)
                | (Q(kind__in=[StepKind.PROPOSAL, StepKind.NOOP_CHECK, StepKind.ROLLOUT]) & Q(iteration__gte=1)),
                name="generation_step_iteration_fits_kind",
            ),
            models.CheckConstraint(
                condition=Q(kind=StepKind.JUDGEMENT, judge__gt="") | (~Q(kind=StepKind.JUDGEMENT) & Q(judge="")),
                name="generation_judgement_names_judge",
            ),
            models.CheckConstraint(
                condition=Q(r_task__isnull=True) | Q(r_task__lte=1), name="generation_r_task_is_binary"
            ),
            models.CheckConstraint(
                condition=Q(r_harm__isnull=True) | Q(r_harm__lte=1), name="generation_r_harm_is_binary"
            ),
            models.CheckConstraint(
                condition=Q(cost_usd__isnull=True) | Q(cost_usd__gte=0), name="generation_step_cost_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(perturbation="") | Q(perturbation__in=["delegation_of_control", "underspecification"]),
                name="generation_perturbation_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.iteration or self.judge}"


__all__ = [
    "BACKENDS",
    "GenerationBudgetHold",
    "GenerationRun",
    "GenerationSearch",
    "GenerationStep",
    "RunStatus",
    "SearchEnding",
    "SearchStatus",
    "StepKind",
]


class GenerationModelCall(ModelCallFields):
    """One model call through the model gateway, kept when it ends as a trial's calls are
    (`evaluation.ModelCall`) and charged to the run's budget: a model-mode target's in a seed
    rollout or rollout, or the proposer's or a judge's (whose prompt and reply the step keeps).
    The fields both tables share are `evaluation.model_ledger.calls.ModelCallFields`."""

    search = models.ForeignKey(GenerationSearch, on_delete=models.CASCADE, related_name="model_calls")
    step_kind = models.CharField(max_length=20, choices=StepKind.choices)
    iteration = models.PositiveSmallIntegerField()
    route = models.CharField(max_length=40)
    model = models.CharField(max_length=200, blank=True)
    status_code = models.IntegerField()
    usage_reported = models.BooleanField(default=True)
    latency = models.FloatField(default=0.0)
    error = models.TextField(blank=True)

    class Meta:
        app_label = "evaluation"
        ordering = ["search", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(cost_usd__isnull=True) | Q(cost_usd__gte=0), name="generation_call_cost_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.route} {self.model}"


class GenerationBudgetHold(models.Model):
    """A share of a generation run's USD budget held by one model call in flight (a target's, the
    proposer's or a judge's), from before the gateway forwards it until it is settled; the budget
    check counts what the run has spent and the live holds together. A hold whose worker died
    lapses at `expires_at`."""

    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="budget_holds")
    search = models.ForeignKey(GenerationSearch, on_delete=models.CASCADE, related_name="budget_holds")
    amount_usd = models.DecimalField(max_digits=14, decimal_places=8)
    expires_at = models.DateTimeField()

    class Meta:
        app_label = "evaluation"
        indexes = [models.Index(fields=["run", "expires_at"], name="generation_hold_expiry_idx")]
        constraints = [models.CheckConstraint(condition=Q(amount_usd__gte=0), name="generation_hold_not_negative")]

    def __str__(self) -> str:
        return f"${self.amount_usd} held for search {self.search_id}"
