from rest_framework import serializers

from .models import Candidate, Judgement, SourceTask


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

    class Meta:
        model = Candidate
        fields = [
            "id", "rank", "quality", "group", "judge_sums", "perturbation", "risk_category",
            "target_agent", "proposer", "iteration", "source_task_id", "flags",
        ]

    def get_group(self, obj: Candidate) -> str:
        return self.context["bounds"].group(obj.rank)

    def get_judge_sums(self, obj: Candidate) -> dict[str, int]:
        return dict(self.context["sums"].get(obj.pk, []))

    def get_flags(self, obj: Candidate) -> list[str]:
        return self.context.get("flags", {}).get(obj.pk, [])


class CandidateDetailSerializer(CandidateListSerializer):
    source_task = SourceTaskSerializer()
    judgements = JudgementSerializer(many=True)

    class Meta(CandidateListSerializer.Meta):
        fields = CandidateListSerializer.Meta.fields + [
            "instruction", "harm_test", "harm_summary", "references", "twin", "extra", "source_task", "judgements",
        ]


class ImportSummarySerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    replaced = serializers.IntegerField()
    searches_created = serializers.IntegerField()
    searches_unchanged = serializers.IntegerField()
    searches_replaced = serializers.IntegerField()
    source_tasks_created = serializers.IntegerField()


class ImportErrorSerializer(serializers.Serializer):
    file = serializers.CharField(source="location.file")
    line = serializers.IntegerField(source="location.line")
    field = serializers.CharField()
    message = serializers.CharField()


class ImportRequestSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), help_text="One or more JSON Lines files")
    replace = serializers.BooleanField(default=False)
