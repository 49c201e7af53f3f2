"""What the V3AST API answers: a run's model x harness matrix and one system's scores, with their intervals."""

from __future__ import annotations

from typing import TypedDict

from rest_framework import serializers

from veriharm_site.interval_fields import IntervalSerializer


class _ShareBounds(TypedDict):
    allow_null: bool
    min_value: float
    max_value: float


SHARE: _ShareBounds = {"allow_null": True, "min_value": 0.0, "max_value": 1.0}


class ScoresSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    eligible = serializers.IntegerField(help_text="Tasks whose twin was CAPABLE in every repetition")
    twin_runs = serializers.IntegerField(help_text="Resolved twin runs")
    twin_capable_runs = serializers.IntegerField()
    twin_pass_rate = serializers.FloatField(**SHARE)
    asr = serializers.FloatField(**SHARE, help_text="Share of eligible tasks with at least one COMPROMISED run")
    completion_rate = serializers.FloatField(**SHARE)
    twin_pass_rate_ci = IntervalSerializer(allow_null=True, help_text="95% Wilson interval, over twin runs")
    asr_ci = IntervalSerializer(allow_null=True, help_text="95% Wilson interval, over eligible tasks with evidence")
    completion_rate_ci = IntervalSerializer(allow_null=True, help_text="95% Wilson interval, over resolved risk runs")
    asr_at_n = serializers.ListField(child=serializers.FloatField(**SHARE), help_text="ASR@1 .. ASR@N")
    asr_at_n_sd = serializers.ListField(
        child=serializers.FloatField(allow_null=True), help_text="SD of each ASR@n across sets of n repetitions"
    )
    asr_sd_across_repetitions = serializers.FloatField(allow_null=True)
    per_repetition_asr = serializers.ListField(child=serializers.FloatField(**SHARE))
    unresolved_runs = serializers.IntegerField()


class StabilitySerializer(serializers.Serializer):
    repetitions = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2)
    spearman = serializers.FloatField(allow_null=True)


class MatrixCellSerializer(serializers.Serializer):
    model = serializers.CharField()
    harness = serializers.CharField()
    agent = serializers.CharField(source="agent.name")
    agent_id = serializers.IntegerField(source="agent.pk")
    scores = ScoresSerializer()
    pending_runs = serializers.IntegerField()


class GroupScoresSerializer(serializers.Serializer):
    group = serializers.CharField()
    scores = ScoresSerializer()


class TaskSerializer(serializers.Serializer):
    task = serializers.CharField(help_text="The candidate's id")
    # A declared field, which the metaclass takes off the class (Field.source is another thing).
    source = serializers.CharField(help_text="direct, indirect, or empty when not said")  # type: ignore[assignment]
    category = serializers.CharField()
    eligible = serializers.BooleanField()
    twin_capable = serializers.ListField(
        child=serializers.BooleanField(allow_null=True), help_text="By repetition; null: no verdict; empty: no twin"
    )
    risk = serializers.ListField(
        child=serializers.CharField(allow_null=True), help_text="Outcome label by repetition; null: no label yet"
    )


class RunMatrixSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    protocol = serializers.CharField()
    repetitions = serializers.IntegerField()
    models = serializers.ListField(child=serializers.CharField())
    harnesses = serializers.ListField(child=serializers.CharField())
    cells = MatrixCellSerializer(many=True)
    rank_stability = StabilitySerializer(many=True)


class SystemScoresSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    agent = serializers.CharField()
    model = serializers.CharField()
    harness = serializers.CharField()
    repetitions = serializers.IntegerField()
    pending_runs = serializers.IntegerField()
    without_twin = serializers.IntegerField()
    scores = ScoresSerializer()
    by_source = GroupScoresSerializer(many=True)
    by_category = GroupScoresSerializer(many=True)
    tasks = TaskSerializer(many=True)
    rank_stability = StabilitySerializer(many=True)
