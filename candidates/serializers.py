from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .harm_test_verdicts import REFERENCE_STATES
from .models import Candidate, Judgement, SourceTask
from .selectors import ImportJobState


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


class ImportSummarySerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    replaced = serializers.IntegerField()
    searches_created = serializers.IntegerField()
    searches_unchanged = serializers.IntegerField()
    searches_replaced = serializers.IntegerField()
    source_tasks_created = serializers.IntegerField()


class ImportRequestSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), help_text="One or more JSON Lines files")
    replace = serializers.BooleanField(default=False)


class ImportJobErrorSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField()
    field = serializers.CharField()
    message = serializers.CharField()


class ImportJobFileSerializer(serializers.Serializer):
    name = serializers.CharField()
    size = serializers.IntegerField()
    lines = serializers.IntegerField()


class ImportJobSerializer(serializers.Serializer):
    """An import job from `selectors.import_job_state`: its status, progress and, once ended, its result."""

    id = serializers.IntegerField(source="job.pk")
    status = serializers.ChoiceField(source="job.status", choices=["queued", "running", "done", "refused", "failed"])
    phase = serializers.CharField()
    percent = serializers.IntegerField(help_text="0-100; 100 only once the job has ended")
    validated_lines = serializers.IntegerField(source="validated")
    imported_records = serializers.IntegerField(source="imported")
    total_lines = serializers.IntegerField(source="job.total_lines")
    replace = serializers.BooleanField(source="job.replace")
    files = ImportJobFileSerializer(source="job.files", many=True)
    created_at = serializers.DateTimeField(source="job.created_at")
    started_at = serializers.DateTimeField(source="job.started_at", allow_null=True)
    finished_at = serializers.DateTimeField(source="job.finished_at", allow_null=True)
    summary = serializers.SerializerMethodField(help_text="Counts once done; null otherwise")
    # A declared field, which the metaclass takes off the class: Serializer.errors stays what it is.
    errors = ImportJobErrorSerializer(source="job.errors", many=True, help_text="Every bad line once refused")  # type: ignore[assignment]
    failure = serializers.CharField(source="job.failure")
    status_url = serializers.SerializerMethodField()

    def get_status_url(self, state: ImportJobState) -> str:
        from django.urls import reverse

        url = reverse("api-candidates-import-job", args=[state.job.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request is not None else url

    @extend_schema_field(ImportSummarySerializer(allow_null=True))
    def get_summary(self, state: ImportJobState) -> dict | None:
        return ImportSummarySerializer(state.job.summary).data if state.job.summary else None
