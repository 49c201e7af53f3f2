"""Forms of the curation pages: they check types only; the services check the rules and their
refusals are put back on the form field they name."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from ..models import DecisionReason, Verdict


class DecisionForm(forms.Form):
    candidate = forms.CharField(widget=forms.HiddenInput)
    revision = forms.IntegerField(min_value=1, max_value=2**31 - 1, widget=forms.HiddenInput)
    verdict = forms.ChoiceField(choices=Verdict.choices)
    reason = forms.ChoiceField(choices=DecisionReason.choices, widget=forms.RadioSelect)
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)
    # Approving a flagged candidate: the curator confirms the warning, which the page rendered
    # into `warning_seen` so that flags changed since are read before they are confirmed.
    acknowledge_flags = forms.BooleanField(required=False, label="I have read the warning and approve anyway")
    acknowledge_human_verdict = forms.BooleanField(
        required=False, label="Humans judged it invalid: I have checked it and approve anyway"
    )
    acknowledge_synthetic = forms.BooleanField(
        required=False, label="No model produced its judge scores and Q: I approve it anyway, knowing it is synthetic"
    )
    warning_seen = forms.CharField(required=False, widget=forms.HiddenInput, max_length=5000)


class CandidateIdsField(forms.Field):
    """The ticked rows of the queue: one value per checkbox, each a candidate id."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {"too_long": "a candidate id has at most 200 characters"}

    def to_python(self, value: object) -> list[str]:
        values = value if isinstance(value, list | tuple) else [value] if value else []
        ids = [str(v).strip() for v in values if str(v).strip()]
        if any(len(v) > 200 for v in ids):
            raise forms.ValidationError(self.error_messages["too_long"], code="too_long")
        return ids


class RevisionsField(forms.Field):
    """The revisions the confirm step showed, one per candidate, in the candidates' order."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {"invalid": "each revision is a whole number from 1 to 2147483647"}

    def to_python(self, value: object) -> list[int]:
        values = value if isinstance(value, list | tuple) else [value] if value else []
        try:
            revisions = [int(str(v).strip()) for v in values]
        except ValueError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None
        if any(not 1 <= r <= 2**31 - 1 for r in revisions):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return revisions


class BulkDecisionForm(forms.Form):
    """One decision for the candidates ticked in the queue; `confirmed` is set by the confirm step."""

    candidates = CandidateIdsField(required=False)
    # No default: a batch decided by a preselected verdict is one nobody chose.
    verdict = forms.ChoiceField(
        choices=[("", "Choose a verdict…"), *Verdict.choices],
        error_messages={"required": "choose approve or reject for the ticked candidates"},
    )
    reason = forms.ChoiceField(choices=DecisionReason.choices)
    note = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 1}), max_length=settings.VERIHARM_MAX_COMMENT_CHARS
    )
    acknowledge_flags = forms.BooleanField(required=False, label="Approve flagged candidates among them anyway")
    acknowledge_human_verdict = forms.BooleanField(
        required=False, label="Approve candidates humans judged invalid among them anyway"
    )
    acknowledge_synthetic = forms.BooleanField(
        required=False, label="Approve synthetic candidates among them anyway (no model produced their figures)"
    )
    revisions = RevisionsField(required=False)
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        revisions, ids = data.get("revisions"), data.get("candidates")
        if revisions and ids is not None and len(revisions) != len(ids):
            self.add_error(
                "revisions", f"one revision per candidate: {len(ids)} candidates, {len(revisions)} revisions"
            )
        return data

    def seen_revisions(self) -> dict[str, int] | None:
        """The revisions the confirm step showed, by candidate id (None before that step)."""
        revisions = self.cleaned_data.get("revisions")
        return dict(zip(self.cleaned_data["candidates"], revisions, strict=True)) if revisions else None


class RevisionForm(forms.Form):
    base_revision = forms.IntegerField(min_value=1, max_value=2**31 - 1, widget=forms.HiddenInput)
    instruction = forms.CharField(
        max_length=settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "class": "prose-input"}),
        label="Instruction (t~)",
    )
    harm_test = forms.CharField(
        max_length=settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 16, "class": "code-input"}),
        label="Harm test (V_harm)",
    )
    reason = forms.CharField(
        max_length=2000, widget=forms.Textarea(attrs={"rows": 2}), label="Why (kept with the revision)"
    )
