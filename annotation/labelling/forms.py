"""Forms of the annotator's labelling pages: a label, setting an item aside, their shortcuts."""

from __future__ import annotations

from django import forms

from ..write_rules.refusals import MAX_REASON
from .services import MAX_COMMENT, MAX_SECONDS_SPENT, LabelInput

YES_NO = [("yes", "Yes"), ("no", "No")]


class LabelForm(forms.Form):
    c1 = forms.ChoiceField(choices=YES_NO, widget=forms.RadioSelect)
    c2 = forms.ChoiceField(choices=YES_NO, widget=forms.RadioSelect)
    c3 = forms.ChoiceField(choices=YES_NO, widget=forms.RadioSelect)
    comment = forms.CharField(required=False, max_length=MAX_COMMENT, widget=forms.Textarea(attrs={"rows": 3}))
    seconds_spent = forms.FloatField(required=False, min_value=0, max_value=MAX_SECONDS_SPENT, widget=forms.HiddenInput)
    then = forms.ChoiceField(choices=[("next", "next"), ("labels", "labels")], required=False, widget=forms.HiddenInput)

    def label(self) -> LabelInput:
        data = self.cleaned_data
        return LabelInput(
            c1=data["c1"] == "yes",
            c2=data["c2"] == "yes",
            c3=data["c3"] == "yes",
            comment=data["comment"],
            seconds_spent=data["seconds_spent"],
        )


class SkipForm(forms.Form):
    unclear = forms.BooleanField(required=False)
    reason = forms.CharField(required=False, max_length=MAX_REASON)


class PreferencesForm(forms.Form):
    single_key_shortcuts = forms.ChoiceField(choices=[("on", "on"), ("off", "off")])
