"""What the API of a trial and of a candidate's results takes and answers: a trial with its inputs,
steps, model calls and final state; re-scores, reference checks, latest results, re-runs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from candidates.hooks.harm_test_verdicts import REFERENCE_STATES
from evaluation.models import (
    ModelCall,
    ReferenceCheck,
    Rescore,
    TranscriptStep,
    Trial,
)
from evaluation.results.reference_state import reference_state
from evaluation.runs.serializers import MAX_REPETITIONS_INPUT, TrialInputsSerializer, TrialSerializer, agent_list_field


class CandidateRerunSerializer(serializers.Serializer):
    agents = agent_list_field(required=False, help_text="Agent ids or names; default: the reference agents")
    repetitions = serializers.IntegerField(required=False, default=1, min_value=1, max_value=MAX_REPETITIONS_INPUT)
    backend = serializers.CharField(required=False, allow_blank=True, max_length=32)


class TrialInputsTextSerializer(TrialInputsSerializer):
    class Meta(TrialInputsSerializer.Meta):
        fields = TrialInputsSerializer.Meta.fields + ["instruction", "task_test", "harm_test", "environment"]


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
