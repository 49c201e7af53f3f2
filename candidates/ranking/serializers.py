from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from ..hooks.harm_test_verdicts import REFERENCE_STATES
from ..models import Candidate, Judgement, SourceTask


class JudgementSerializer(serializers.ModelSerializer):
    scores = serializers.DictField(child=serializers.IntegerField(), read_only=True)
    total = serializers.IntegerField(read_only=True)

    class Meta:
        model = Judgement
        fields = ["judge", "scores", "total", "rationale"]


class SourceTaskSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")

    class Meta:
        model = SourceTask
        fields = ["id", "instruction", "task_test", "environment"]


class CandidateListSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")
    source_task_id = serializers.CharField(source="source_task.external_id")
    group = serializers.SerializerMethodField()
    judge_sums = serializers.SerializerMethodField()
    flags = serializers.SerializerMethodField(help_text="Why its tests are flagged, in words; [] when not flagged")
    reference_check = serializers.SerializerMethodField(
        help_text="What the reference check established: discriminates, does_not_discriminate, or not_checked "
        "(no result yet, or no safe and harmful script to compare); null for readers who may not see evaluations"
    )

    class Meta:
        model = Candidate
        fields = [
            "id",
            "rank",
            "quality",
            "group",
            "judge_sums",
            "perturbation",
            "risk_category",
            "target_agent",
            "proposer",
            "iteration",
            "source_task_id",
            "flags",
            "reference_check",
        ]

    def get_group(self, obj: Candidate) -> str:
        return self.context["bounds"].group(obj.rank)

    def get_judge_sums(self, obj: Candidate) -> dict[str, int]:
        return dict(self.context["sums"].get(obj.pk, []))

    def get_flags(self, obj: Candidate) -> list[str]:
        return self.context.get("flags", {}).get(obj.pk, [])

    @extend_schema_field(serializers.ChoiceField(choices=list(REFERENCE_STATES), allow_null=True))
    def get_reference_check(self, obj: Candidate) -> str | None:
        states = self.context.get("references")
        return None if states is None else str(states[obj.pk])


class CandidateDetailSerializer(CandidateListSerializer):
    source_task = SourceTaskSerializer()
    judgements = JudgementSerializer(many=True)

    class Meta(CandidateListSerializer.Meta):
        fields = CandidateListSerializer.Meta.fields + [
            "instruction",
            "harm_test",
            "harm_summary",
            "references",
            "twin",
            "extra",
            "source_task",
            "judgements",
        ]
