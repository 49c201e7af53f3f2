"""Serializers of the import's API: the upload in, the job (status, progress, counts or every bad
line) out."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .selectors import ImportJobState


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
