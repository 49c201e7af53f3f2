from __future__ import annotations

from typing import Any

from django import forms

from candidates.pool import selectors as candidate_selectors
from evaluation.model_ledger.budgets import MIN_BUDGET_USD
from evaluation.models import LAUNCHABLE_BACKENDS, Agent, Protocol
from evaluation.models.taxonomy import NO_VERDICT_ENDS, TrialEnd
from evaluation.runs.selection import releases_available, studies_available

SELECTION_KINDS = [
    ("ids", "Candidate ids"),
    ("top_k", "Top-K of the ranking"),
    ("filter", "A filter of the ranking"),
    ("study", "An annotation study"),
    ("release", "A benchmark release"),
]


class LaunchForm(forms.Form):
    name = forms.CharField(required=False, max_length=200)
    selection_kind = forms.ChoiceField(choices=SELECTION_KINDS, initial="ids", widget=forms.RadioSelect)
    ids = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), help_text="One candidate id a line")
    k = forms.IntegerField(required=False, min_value=1, label="K")
    q = forms.CharField(required=False, label="Search")
    group = forms.ChoiceField(
        required=False, choices=[("", "All"), ("top", "Top-K"), ("bottom", "Bottom-K"), ("unranked", "Unranked")]
    )
    perturbation = forms.ChoiceField(required=False)
    risk_category = forms.ChoiceField(required=False)
    target_agent = forms.ChoiceField(required=False)
    proposer = forms.ChoiceField(required=False)
    study = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    release = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    agents = forms.ModelMultipleChoiceField(
        queryset=Agent.objects.filter(active=True).order_by("kind", "name"), widget=forms.CheckboxSelectMultiple
    )
    protocol = forms.ChoiceField(
        choices=Protocol.choices, initial=Protocol.VERIHARM, widget=forms.RadioSelect, required=False
    )
    repetitions = forms.IntegerField(
        min_value=1, max_value=100, required=False, help_text="Empty: 1, or 4 under V3AST-Bench"
    )
    backend = forms.ChoiceField(choices=[(b.value, b.label) for b in LAUNCHABLE_BACKENDS])
    test_timeout = forms.IntegerField(min_value=1, max_value=3600, required=False, help_text="Seconds per test")
    budget_usd = forms.DecimalField(
        required=False,
        min_value=MIN_BUDGET_USD,
        max_digits=12,
        decimal_places=4,
        label="Budget (USD)",
        help_text="What the run's model calls may cost in all; empty: no budget",
    )

    def __init__(self, *args: Any, default_backend: str = "local", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["backend"].initial = default_backend
        for name, values in candidate_selectors.filter_choices().items():
            self._choice_field(name).choices = [("", "Any")] + [(v, v) for v in values]
        self._choice_field("study").choices = [("", "–")] + [(pk, name) for pk, name in studies_available()]
        self._choice_field("release").choices = [("", "–")] + [(pk, name) for pk, name in releases_available()]

    def _choice_field(self, name: str) -> forms.ChoiceField:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)  # each one declared as such above
        return field

    def selection(self) -> dict[str, Any]:
        data = self.cleaned_data
        kind = data["selection_kind"]
        if kind == "ids":
            return {"kind": "ids", "ids": [line.strip() for line in data["ids"].splitlines() if line.strip()]}
        if kind == "top_k":
            return {"kind": "top_k", "k": data.get("k")}
        if kind == "study":
            return {"kind": "study", "study": data.get("study")}
        if kind == "release":
            return {"kind": "release", "release": data.get("release")}
        selection: dict[str, Any] = {"kind": "filter"}
        for key in ("q", "group", "k", *candidate_selectors.FILTER_FIELDS):
            if data.get(key) not in (None, ""):
                selection[key] = data[key]
        return selection


class RetryForm(forms.Form):
    """Which endings without a verdict to retry; the service names any other value it is given."""

    ends = forms.MultipleChoiceField(
        choices=[(end, TrialEnd(end).label) for end in NO_VERDICT_ENDS],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "choose at least one ending to retry"},
    )
