from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from candidates.harm_test_verdicts import REFERENCE_STATES
from evaluation.models.taxonomy import NO_VERDICT_ENDS, TrialEnd
from evaluation.results import selectors
from evaluation.results.reference_state import reference_state

from .models import Agent, ModelCall, Protocol, ReferenceCheck, Rescore, Run, TranscriptStep, Trial, TrialInputs


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
        usage = self.context.get("model_usage", {}).get(run.pk) or selectors.run_model_usage(run)
        return RunUsageSerializer(usage).data


# Bounds of what a launch may ask for; the services check the same ranges (and the database columns
# hold them), these make the API refuse with the field's name and the schema state the ranges.
MAX_AGENTS = 50
MAX_REPETITIONS_INPUT = 100
MAX_TEST_TIMEOUT = 3600


def _agent_list(**kwargs: Any) -> serializers.ListField:
    kwargs.setdefault("help_text", "Agent ids or names")
    return serializers.ListField(child=serializers.CharField(max_length=100), max_length=MAX_AGENTS, **kwargs)


class LaunchSerializer(serializers.Serializer):
    selection = serializers.DictField(
        help_text='e.g. {"kind": "ids", "ids": [...]}, {"kind": "top_k", "k": 150}, '
        '{"kind": "filter", "perturbation": "..."}, {"kind": "study", "study": 3}, '
        '{"kind": "release", "release": 2}'
    )
    agents = _agent_list(allow_empty=False)
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
        min_value=Decimal("0.0001"),
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


class CandidateRerunSerializer(serializers.Serializer):
    agents = _agent_list(required=False, help_text="Agent ids or names; default: the reference agents")
    repetitions = serializers.IntegerField(required=False, default=1, min_value=1, max_value=MAX_REPETITIONS_INPUT)
    backend = serializers.CharField(required=False, allow_blank=True, max_length=32)


class TrialInputsSerializer(serializers.ModelSerializer):
    """What a trial ran, each part with its sha256."""

    class Meta:
        model = TrialInputs
        fields = ["digest", "instruction_sha256", "task_test_sha256", "harm_test_sha256", "environment_sha256"]


class TrialInputsTextSerializer(TrialInputsSerializer):
    class Meta(TrialInputsSerializer.Meta):
        fields = TrialInputsSerializer.Meta.fields + ["instruction", "task_test", "harm_test", "environment"]


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
        if selectors.has_model_usage(trial):  # no query per trial
            usage = {
                "calls": trial.model_calls_n,
                "input_tokens": trial.tokens_in or 0,
                "output_tokens": trial.tokens_out or 0,
                "cost_usd": trial.cost or 0,
                "retries": trial.retries_n or 0,
                "unpriced_calls": trial.unpriced_n,
            }
        else:
            usage = selectors.trial_model_usage(trial.pk)
        return _MODEL_USAGE.to_representation(usage)


class StepSerializer(serializers.ModelSerializer):
    class Meta:
        model = TranscriptStep
        fields = ["attempt", "index", "kind", "content", "command", "exit_code", "timed_out", "duration", "created_at"]


class ModelCallSerializer(serializers.ModelSerializer):
    class Meta:
        model = ModelCall
        fields = [
            "attempt",
            "route",
            "model",
            "streamed",
            "status_code",
            "input_tokens",
            "output_tokens",
            "usage_reported",
            "usage_estimated",
            "gateway_failure",
            "latency",
            "retries",
            "cost_usd",
            "error",
            "created_at",
        ]


class FinalStateSerializer(serializers.Serializer):
    kept = serializers.BooleanField()
    sha256 = serializers.CharField(allow_null=True)
    size = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    note = serializers.CharField()


class TrialDetailSerializer(TrialSerializer):
    steps = StepSerializer(many=True, read_only=True)
    inputs = TrialInputsTextSerializer(read_only=True, allow_null=True)
    final_state = serializers.SerializerMethodField()
    model_calls = ModelCallSerializer(many=True, read_only=True)

    class Meta(TrialSerializer.Meta):
        fields = TrialSerializer.Meta.fields + [
            "agent_output",
            "task_output",
            "harm_output",
            "task_timed_out",
            "harm_timed_out",
            "inputs",
            "agent_config",
            "final_state",
            "model_calls",
            "steps",
        ]

    @extend_schema_field(FinalStateSerializer)
    def get_final_state(self, trial: Trial) -> dict:
        state = getattr(trial, "final_state", None)
        kept = state is not None and state.available
        return {
            "kept": kept,
            "sha256": state.sha256 if state else None,
            "size": state.size if state else None,
            "expires_at": state.expires_at if state else None,
            "note": trial.final_state_note or ("" if kept or state is None else "deleted at the end of its retention"),
        }


class RescoreSerializer(serializers.ModelSerializer):
    trial = serializers.IntegerField(source="trial_id", read_only=True)
    agent = serializers.CharField(source="trial.agent.name", read_only=True)
    original_revision = serializers.IntegerField(source="trial.candidate_revision", read_only=True)
    original_r_task = serializers.IntegerField(source="trial.r_task", read_only=True, allow_null=True)
    original_r_harm = serializers.IntegerField(source="trial.r_harm", read_only=True, allow_null=True)
    task_test_sha256 = serializers.CharField(source="inputs.task_test_sha256", read_only=True)
    harm_test_sha256 = serializers.CharField(source="inputs.harm_test_sha256", read_only=True)
    flipped = serializers.BooleanField(
        read_only=True, allow_null=True, help_text="The re-scored (r_task, r_harm) differs from the trial's own"
    )

    class Meta:
        model = Rescore
        fields = [
            "id",
            "trial",
            "agent",
            "original_revision",
            "original_r_task",
            "original_r_harm",
            "candidate_revision",
            "status",
            "end",
            "r_task",
            "r_harm",
            "flipped",
            "task_test_sha256",
            "harm_test_sha256",
            "task_exit_code",
            "harm_exit_code",
            "system_identity",
            "error",
            "created_at",
            "finished_at",
        ]


class ReferenceCheckSerializer(serializers.ModelSerializer):
    flags = serializers.ListField(
        source="flag_reasons",
        child=serializers.CharField(),
        read_only=True,
        help_text="What is wrong with the tests, in words; [] unless flagged",
    )
    state = serializers.SerializerMethodField(
        help_text="What the check established: discriminates, does_not_discriminate, or not_checked (pending, or "
        "no safe and harmful script to compare: a verdict of discriminates without both is not_checked)"
    )

    class Meta:
        model = ReferenceCheck
        fields = [
            "candidate_revision",
            "state",
            "verdict",
            "flags",
            "detail",
            "safe_trial",
            "harmful_trial",
            "noop_trial",
            "harm_passes_untouched",
            "task_passes_untouched",
            "does_not_discriminate",
            "updated_at",
        ]

    @extend_schema_field(serializers.ChoiceField(choices=list(REFERENCE_STATES)))
    def get_state(self, check: ReferenceCheck) -> str:
        return str(reference_state(check))


class LatestResultSerializer(serializers.Serializer):
    agent = serializers.CharField()
    model = serializers.CharField()
    harness = serializers.CharField()
    r_task = serializers.IntegerField()
    r_harm = serializers.IntegerField()
    stale = serializers.BooleanField()
    trial = serializers.IntegerField()
    finished_at = serializers.DateTimeField()


class CandidateResultsSerializer(serializers.Serializer):
    """A candidate's latest result per agent, its reference check (null before any) and its trials."""

    candidate = serializers.CharField()
    revision = serializers.IntegerField()
    latest = LatestResultSerializer(many=True)
    reference_check = ReferenceCheckSerializer(allow_null=True)
    history = TrialSerializer(many=True)


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
