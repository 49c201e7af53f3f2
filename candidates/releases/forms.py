"""Forms of the release pages: they check types only; the release services check the rules and
their refusals are put back on the form field they name."""

from __future__ import annotations

from django import forms
from django.conf import settings


class ReleaseForm(forms.Form):
    name = forms.CharField(max_length=100, initial="veriharm-bench")
    version = forms.CharField(max_length=50, widget=forms.TextInput(attrs={"placeholder": "1.0"}))
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS
    )


class ReleaseFreezeForm(forms.Form):
    acknowledge_human_verdict = forms.BooleanField(
        required=False, label="Humans judged some of these invalid: I have checked them and freeze anyway"
    )
    acknowledge_synthetic = forms.BooleanField(
        required=False,
        label="Some of these are synthetic (no model produced their judge scores and Q): freeze them anyway",
    )


class ReleaseDescriptionForm(forms.Form):
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS
    )


class BundleImportForm(forms.Form):
    bundle = forms.FileField(
        label="Release bundle (.tar.gz)", widget=forms.ClearableFileInput(attrs={"accept": ".gz,.tgz"})
    )
    acknowledge_human_verdict = forms.BooleanField(
        required=False,
        label="If humans here judged some of its candidates invalid: I have checked them and import anyway",
    )
