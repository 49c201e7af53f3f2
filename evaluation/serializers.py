from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import Agent, Protocol, ReferenceCheck, Rescore, Run, Trial, TrialInputs, TranscriptStep
from .taxonomy import TrialEnd


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
    ends = serializers.DictField(child=serializers.IntegerField(),
                                 help_text="Finished trials by how they ended: " + ", ".join(TrialEnd.values))
    elapsed_seconds = serializers.FloatField()
    eta_seconds = serializers.FloatField(allow_null=True)
    percent = serializers.FloatField()


class RunSerializer(serializers.ModelSerializer):
    agents = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    cancelled = serializers.BooleanField(read_only=True)
    release = serializers.CharField(source="release.label", default=None, read_only=True,
                                    help_text="The frozen release the run evaluates exactly as frozen, if any")

    class Meta:
        model = Run
        fields = [
            "id", "name", "backend", "protocol", "repetitions", "agents", "selection", "rerun_of", "test_timeout", "notes",
            "created_by", "created_at", "cancelled", "release", "release_checksum", "inputs_sha256",
        ]


class LaunchSerializer(serializers.Serializer):
    selection = serializers.DictField(help_text='e.g. {"kind": "ids", "ids": [...]}, {"kind": "top_k", "k": 150}, '
                                      '{"kind": "filter", "perturbation": "..."}, {"kind": "study", "study": 3}, '
                                      '{"kind": "release", "release": 2}')
    agents = serializers.ListField(child=serializers.CharField(), help_text="Agent ids or names", allow_empty=False)
    protocol = serializers.ChoiceField(choices=Protocol.choices, required=False,
                                       help_text="v3ast also runs each candidate's capability twin")
    repetitions = serializers.IntegerField(required=False, help_text="Default 1, or 4 under the v3ast protocol")
    backend = serializers.CharField(required=False, allow_blank=True)
    name = serializers.CharField(required=False, allow_blank=True, default="")
    test_timeout = serializers.IntegerField(required=False)


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
    end = serializers.CharField(read_only=True, help_text="How the trial ended, empty while it runs: "
                                + ", ".join(TrialEnd.values) + " (docs: evaluation.taxonomy)")
    inputs_digest = serializers.CharField(source="inputs.digest", default=None, read_only=True,
                                          help_text="sha256 of everything the trial ran (see inputs)")

    class Meta:
        model = Trial
        fields = [
            "id", "run", "candidate", "agent", "kind", "repetition", "candidate_revision", "stale", "status", "end",
            "r_task", "r_harm", "outcome", "outcome_reason", "inputs_digest", "agent_config_sha256", "system_identity", "agent_exit_code", "agent_timed_out",
            "agent_hit_step_limit", "agent_duration", "task_exit_code", "task_duration", "harm_exit_code",
            "harm_duration", "attempts", "error", "queued_at", "started_at", "finished_at",
        ]


class StepSerializer(serializers.ModelSerializer):
    class Meta:
        model = TranscriptStep
        fields = ["attempt", "index", "kind", "content", "command", "exit_code", "timed_out", "duration", "created_at"]


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

    class Meta(TrialSerializer.Meta):
        fields = TrialSerializer.Meta.fields + [
            "agent_output", "task_output", "harm_output", "task_timed_out", "harm_timed_out", "inputs",
            "agent_config", "final_state", "steps",
        ]

    @extend_schema_field(FinalStateSerializer)
    def get_final_state(self, trial: Trial) -> dict:
        state = getattr(trial, "final_state", None)
        kept = state is not None and state.available
        return {"kept": kept, "sha256": state.sha256 if state else None, "size": state.size if state else None,
                "expires_at": state.expires_at if state else None,
                "note": trial.final_state_note or ("" if kept or state is None else "deleted at the end of its retention")}


class RescoreSerializer(serializers.ModelSerializer):
    trial = serializers.IntegerField(source="trial_id", read_only=True)
    agent = serializers.CharField(source="trial.agent.name", read_only=True)
    original_revision = serializers.IntegerField(source="trial.candidate_revision", read_only=True)
    original_r_task = serializers.IntegerField(source="trial.r_task", read_only=True, allow_null=True)
    original_r_harm = serializers.IntegerField(source="trial.r_harm", read_only=True, allow_null=True)
    task_test_sha256 = serializers.CharField(source="inputs.task_test_sha256", read_only=True)
    harm_test_sha256 = serializers.CharField(source="inputs.harm_test_sha256", read_only=True)
    flipped = serializers.BooleanField(read_only=True, allow_null=True,
                                       help_text="The re-scored (r_task, r_harm) differs from the trial's own")

    class Meta:
        model = Rescore
        fields = [
            "id", "trial", "agent", "original_revision", "original_r_task", "original_r_harm", "candidate_revision",
            "status", "end", "r_task", "r_harm", "flipped", "task_test_sha256", "harm_test_sha256",
            "task_exit_code", "harm_exit_code", "system_identity", "error", "created_at", "finished_at",
        ]


class ReferenceCheckSerializer(serializers.ModelSerializer):
    flags = serializers.ListField(source="flag_reasons", child=serializers.CharField(), read_only=True,
                                  help_text="What is wrong with the tests, in words; [] unless flagged")

    class Meta:
        model = ReferenceCheck
        fields = ["candidate_revision", "verdict", "flags", "detail", "safe_trial", "harmful_trial", "noop_trial",
                  "harm_passes_untouched", "task_passes_untouched", "does_not_discriminate", "updated_at"]


class LatestResultSerializer(serializers.Serializer):
    agent = serializers.CharField()
    model = serializers.CharField()
    harness = serializers.CharField()
    r_task = serializers.IntegerField()
    r_harm = serializers.IntegerField()
    stale = serializers.BooleanField()
    trial = serializers.IntegerField()
    finished_at = serializers.DateTimeField()
