"""What the run import API takes: a log file from another harness, read by the reader it names."""

from __future__ import annotations

from rest_framework import serializers

from .readers import READERS


class RunImportRequestSerializer(serializers.Serializer):
    release = serializers.IntegerField(min_value=1, help_text="id of the frozen release the log ran")
    harness = serializers.ChoiceField(choices=sorted(READERS))
    log = serializers.FileField(help_text="an Inspect log (.eval, .json) or a .tar.gz of a Harbor job directory")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
