from rest_framework import serializers

from .models import Agent, Protocol, ReferenceCheck, Run, Trial, TranscriptStep


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
    elapsed_seconds = serializers.FloatField()
    eta_seconds = serializers.FloatField(allow_null=True)
    percent = serializers.FloatField()


class RunSerializer(serializers.ModelSerializer):
    agents = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    cancelled = serializers.BooleanField(read_only=True)

    class Meta:
        model = Run
        fields = [
            "id", "name", "backend", "protocol", "repetitions", "agents", "selection", "rerun_of", "test_timeout", "notes",
            "created_by", "created_at", "cancelled",
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


class TrialSerializer(serializers.ModelSerializer):
    candidate = serializers.CharField(source="candidate.external_id")
    agent = serializers.CharField(source="agent.name")
    stale = serializers.BooleanField(read_only=True)
    # Plain strings in the schema: "kind" would otherwise share an enum name with the agent's kind.
    kind = serializers.CharField(read_only=True, help_text="risk, or twin (a capability twin: no harm test)")
    outcome = serializers.CharField(read_only=True, help_text="The run's V3AST label; empty until it has one")

    class Meta:
        model = Trial
        fields = [
            "id", "run", "candidate", "agent", "kind", "repetition", "candidate_revision", "stale", "status",
            "r_task", "r_harm", "outcome", "outcome_reason", "agent_exit_code", "agent_timed_out",
            "agent_hit_step_limit", "agent_duration", "task_exit_code", "task_duration", "harm_exit_code",
            "harm_duration", "attempts", "error", "queued_at", "started_at", "finished_at",
        ]


class StepSerializer(serializers.ModelSerializer):
    class Meta:
        model = TranscriptStep
        fields = ["attempt", "index", "kind", "content", "command", "exit_code", "timed_out", "duration", "created_at"]


class TrialDetailSerializer(TrialSerializer):
    steps = StepSerializer(many=True, read_only=True)

    class Meta(TrialSerializer.Meta):
        fields = TrialSerializer.Meta.fields + [
            "agent_output", "task_output", "harm_output", "task_timed_out", "harm_timed_out", "steps",
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
