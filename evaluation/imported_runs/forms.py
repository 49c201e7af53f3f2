from __future__ import annotations

from django import forms

from candidates.models import Release

from .readers import READERS

HARNESS_LABELS = {"inspect": "Inspect AI eval log (.eval or .json)", "harbor": "Harbor job directory (.tar.gz of it)"}


class RunImportForm(forms.Form):
    release = forms.ModelChoiceField(
        queryset=Release.objects.filter(frozen_at__isnull=False).order_by("name", "-frozen_at"),
        help_text="The frozen release the log ran (the log's release checksum must be this one's)",
    )
    harness = forms.ChoiceField(choices=[(key, HARNESS_LABELS.get(key, key)) for key in sorted(READERS)])
    log = forms.FileField()
    name = forms.CharField(max_length=200, required=False, help_text="Default: the task, harness and model")
