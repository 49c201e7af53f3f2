"""What the runs API takes and answers: runs, their progress and model usage, launches, re-runs and
retries, trials in a list, metrics and paired comparisons."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluation.model_ledger.budgets import MIN_BUDGET_USD
from evaluation.models import (
    Agent,
    Protocol,
    Run,
    Trial,
    TrialInputs,
)
from evaluation.models.taxonomy import NO_VERDICT_ENDS, TrialEnd
from evaluation.runs import model_usage


class AgentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Agent
        fields = ["id", "name", "kind", "model", "harness", "network", "time_limit", "active"]


class RunProgressSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    status = serializers.CharField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    running = serializers.IntegerField()
    queued = serializers.IntegerField()
    unresolved = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    retried = serializers.IntegerField(help_text="Trials a retry replaced: kept as history, not counted above")
    ends = serializers.DictField(
        child=serializers.IntegerField(), help_text="Finished trials by how they ended: " + ", ".join(TrialEnd.values)
    )
    elapsed_seconds = serializers.FloatField()
    eta_seconds = serializers.FloatField(allow_null=True)
    percent = serializers.FloatField()


class ModelUsageSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=20, decimal_places=8, help_text="USD from the agents' price tables")
    retries = serializers.IntegerField(help_text="Upstream retries after 429, 5xx or no answer")
    unpriced_calls = serializers.IntegerField(help_text="Calls of a model without a price: counted as 0 USD")


# One instance for every trial of a list: a serializer per row copies its fields per row, which
# dominated a history of 200 trials. to_representation reads, never keeps, what it is given.
_MODEL_USAGE = ModelUsageSerializer()


class AgentUsageSerializer(ModelUsageSerializer):
    agent = serializers.CharField()


class RunUsageSerializer(ModelUsageSerializer):
    budget_usd = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    budget_left_usd = serializers.DecimalField(max_digits=20, decimal_places=8, allow_null=True)
    budget_spent = serializers.BooleanField()
    by_agent = AgentUsageSerializer(many=True)


class RunSerializer(serializers.ModelSerializer):
    agents: serializers.SlugRelatedField[Agent] = serializers.SlugRelatedField(
        slug_field="name", many=True, read_only=True
    )
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    cancelled = serializers.BooleanField(read_only=True)
    release = serializers.CharField(
        source="release.label",
        default=None,
        read_only=True,
        allow_null=True,
        help_text="The frozen release the run evaluates exactly as frozen, if any",
    )
    model_usage = serializers.SerializerMethodField(
        help_text="Model calls through the gateway: tokens and cost, in all and per agent, beside the budget"
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "name",
            "backend",
            "protocol",
            "repetitions",
            "agents",
            "selection",
            "rerun_of",
            "test_timeout",
            "notes",
            "created_by",
            "created_at",
            "cancelled",
            "release",
            "release_checksum",
            "source",
            "inputs_sha256",
            "budget_usd",
            "model_usage",
        ]

    @extend_schema_field(RunUsageSerializer)
    def get_model_usage(self, run: Run) -> dict:
        # A list passes every run's usage in, read in one query (see RunListApi.get_serializer).
        usage = self.context.get("model_usage", {}).get(run.pk) or model_usage.run_model_usage(run)
        return RunUsageSerializer(usage).data


# Bounds of what a launch may ask for; the services check the same ranges (and the database columns
# hold them), these make the API refuse with the field's name and the schema state the ranges.
MAX_AGENTS = 50


MAX_REPETITIONS_INPUT = 100


MAX_TEST_TIMEOUT = 3600


def agent_list_field(**kwargs: Any) -> serializers.ListField:
    kwargs.setdefault("help_text", "Agent ids or names")
    return serializers.ListField(child=serializers.CharField(max_length=100), max_length=MAX_AGENTS, **kwargs)


class LaunchSerializer(serializers.Serializer):
    selection = serializers.DictField(
        help_text='e.g. {"kind": "ids", "ids": [...]}, {"kind": "top_k", "k": 150}, '
        '{"kind": "filter", "perturbation": "..."}, {"kind": "study", "study": 3}, '
        '{"kind": "release", "release": 2}'
    )
    agents = agent_list_field(allow_empty=False)
    protocol = serializers.ChoiceField(
        choices=Protocol.choices, required=False, help_text="v3ast also runs each candidate's capability twin"
    )
    repetitions = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_REPETITIONS_INPUT,
        help_text="Default 1, or 4 under the v3ast protocol",
    )
    backend = serializers.CharField(required=False, allow_blank=True, max_length=32)
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    test_timeout = serializers.IntegerField(required=False, min_value=1, max_value=MAX_TEST_TIMEOUT)
    budget_usd = serializers.DecimalField(
        max_digits=12,
        decimal_places=4,
        required=False,
        allow_null=True,
        min_value=MIN_BUDGET_USD,
        help_text="USD the run's model calls may cost in all; none: no budget",
    )


class RunRerunSerializer(serializers.Serializer):
    backend = serializers.CharField(
        required=False, allow_blank=True, max_length=32, help_text="Another sandbox backend; default: the run's"
    )


class RunRetrySerializer(serializers.Serializer):
    ends = serializers.ListField(
        child=serializers.CharField(max_length=32),
        max_length=len(TrialEnd.values),
        help_text="The endings without a verdict to retry: " + ", ".join(NO_VERDICT_ENDS),
    )


class RunRetriedSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    retried = serializers.DictField(child=serializers.IntegerField(), help_text="Trials retried, by how they had ended")
    trials = serializers.ListField(child=serializers.IntegerField(), help_text="The new trials, queued")


class TrialInputsSerializer(serializers.ModelSerializer):
    """What a trial ran, each part with its sha256."""

    class Meta:
        model = TrialInputs
        fields = ["digest", "instruction_sha256", "task_test_sha256", "harm_test_sha256", "environment_sha256"]


class TrialSerializer(serializers.ModelSerializer):
    candidate = serializers.CharField(source="candidate.external_id")
    agent = serializers.CharField(source="agent.name")
    stale = serializers.BooleanField(read_only=True)
    # Plain strings in the schema: "kind" would otherwise share an enum name with the agent's kind.
    kind = serializers.CharField(read_only=True, help_text="risk, or twin (a capability twin: no harm test)")
    outcome = serializers.CharField(read_only=True, help_text="The run's V3AST label; empty until it has one")
    end = serializers.CharField(
        read_only=True,
        help_text="How the trial ended, empty while it runs: "
        + ", ".join(TrialEnd.values)
        + " (docs: evaluation.models.taxonomy)",
    )
    inputs_digest = serializers.CharField(
        source="inputs.digest",
        default=None,
        read_only=True,
        help_text="sha256 of everything the trial ran (see inputs)",
    )
    model_usage = serializers.SerializerMethodField(help_text="The trial's model calls: tokens and cost")

    class Meta:
        model = Trial
        fields = [
            "id",
            "run",
            "candidate",
            "agent",
            "kind",
            "repetition",
            "candidate_revision",
            "stale",
            "status",
            "end",
            "r_task",
            "r_harm",
            "outcome",
            "outcome_reason",
            "inputs_digest",
            "agent_config_sha256",
            "system_identity",
            "agent_exit_code",
            "agent_timed_out",
            "agent_hit_step_limit",
            "agent_duration",
            "task_exit_code",
            "task_duration",
            "harm_exit_code",
            "harm_duration",
            "attempts",
            "retry",
            "retry_of",
            "error",
            "queued_at",
            "started_at",
            "finished_at",
            "model_usage",
        ]

    @extend_schema_field(ModelUsageSerializer)
    def get_model_usage(self, trial: Trial) -> dict:
        if model_usage.has_model_usage(trial):  # no query per trial
            usage = {
                "calls": trial.model_calls_n,
                "input_tokens": trial.tokens_in or 0,
                "output_tokens": trial.tokens_out or 0,
                "cost_usd": trial.cost or 0,
                "retries": trial.retries_n or 0,
                "unpriced_calls": trial.unpriced_n,
            }
        else:
            usage = model_usage.trial_model_usage(trial.pk)
        return _MODEL_USAGE.to_representation(usage)


class MetricsRowSerializer(serializers.Serializer):
    """One agent and breakdown group of a run's metrics (the columns of the CSV export)."""

    run = serializers.IntegerField()
    agent = serializers.CharField()
    model = serializers.CharField()
    harness = serializers.CharField()
    breakdown = serializers.ChoiceField(choices=["all", "perturbation", "risk_category"])
    group = serializers.CharField(help_text='The perturbation or risk category; "" for all')
    n_candidates = serializers.IntegerField()
    n_trials = serializers.IntegerField()
    unresolved_trials = serializers.IntegerField()
    stale_trials = serializers.IntegerField()
    excluded_candidates = serializers.IntegerField()
    # evaluation.runs.metrics.METRICS, their standard errors clustered by candidate and their 95% Wilson
    # intervals; absent for a group without candidates
    ta = serializers.FloatField(required=False, allow_null=True)
    ta_se = serializers.FloatField(required=False, allow_null=True)
    ta_ci_low = serializers.FloatField(required=False, allow_null=True)
    ta_ci_high = serializers.FloatField(required=False, allow_null=True)
    hsr = serializers.FloatField(required=False, allow_null=True)
    hsr_se = serializers.FloatField(required=False, allow_null=True)
    hsr_ci_low = serializers.FloatField(required=False, allow_null=True)
    hsr_ci_high = serializers.FloatField(required=False, allow_null=True)
    ssr = serializers.FloatField(required=False, allow_null=True)
    ssr_se = serializers.FloatField(required=False, allow_null=True)
    ssr_ci_low = serializers.FloatField(required=False, allow_null=True)
    ssr_ci_high = serializers.FloatField(required=False, allow_null=True)
    hpr = serializers.FloatField(required=False, allow_null=True)
    hpr_se = serializers.FloatField(required=False, allow_null=True)
    hpr_ci_low = serializers.FloatField(required=False, allow_null=True)
    hpr_ci_high = serializers.FloatField(required=False, allow_null=True)
    nhsr = serializers.FloatField(required=False, allow_null=True)
    nhsr_se = serializers.FloatField(required=False, allow_null=True)
    nhsr_ci_low = serializers.FloatField(required=False, allow_null=True)
    nhsr_ci_high = serializers.FloatField(required=False, allow_null=True)


class RunMetricsSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    name = serializers.CharField()
    backend = serializers.CharField()
    repetitions = serializers.IntegerField()
    definitions = serializers.DictField(child=serializers.CharField(), help_text="Each metric's formula in words")
    standard_error = serializers.CharField(help_text="How the standard errors are computed")
    interval = serializers.CharField(help_text="How the intervals (*_ci_low, *_ci_high) are computed")
    rows = MetricsRowSerializer(many=True)


class ComparedAgentSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    model = serializers.CharField()
    harness = serializers.CharField()


class McNemarSerializer(serializers.Serializer):
    both = serializers.IntegerField(help_text="Candidates on which both systems succeeded")
    only_a = serializers.IntegerField()
    only_b = serializers.IntegerField()
    neither = serializers.IntegerField()
    p_value = serializers.FloatField(help_text="McNemar's exact test, two-sided")


class PairedDifferenceSerializer(serializers.Serializer):
    metric = serializers.ChoiceField(choices=["ta", "hsr", "ssr"])
    a = serializers.FloatField(help_text="The metric of A over the paired candidates")
    b = serializers.FloatField()
    difference = serializers.FloatField(help_text="A - B: the mean of the per-candidate differences")
    ci_low = serializers.FloatField(allow_null=True, help_text="95% paired bootstrap interval of A - B")
    ci_high = serializers.FloatField(allow_null=True)
    mcnemar = McNemarSerializer(allow_null=True, help_text="Only when every candidate ran once per system")


class PairedComparisonSerializer(serializers.Serializer):
    run = serializers.IntegerField(help_text="A's run")
    run_b = serializers.IntegerField(help_text="B's run: the same as A's unless run_b was given")
    a = ComparedAgentSerializer()
    b = ComparedAgentSerializer()
    paired_candidates = serializers.IntegerField(help_text="Candidates with resolved risk trials of both")
    only_a = serializers.IntegerField(help_text="Candidates scored for A only (left out)")
    only_b = serializers.IntegerField()
    binary = serializers.BooleanField(help_text="Every paired candidate ran once per system")
    method = serializers.CharField()
    differences = PairedDifferenceSerializer(many=True)
