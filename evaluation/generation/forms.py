"""The generation launch page's form: types and lengths here, every rule in `launch.generation_launch`."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django import forms

from candidates.pipeline.models import PERTURBATIONS
from evaluation.models import LAUNCHABLE_BACKENDS, Agent, AgentKind

from .launch import DEFAULT_BUDGET
from .models import MAX_BUDGET
from .scripted import JUDGE_PREFIX, JUDGE_TEMPERAMENTS, PROPOSER_NAME
from .serializers import MAX_CONFIG_CHARS, MAX_CONFIGS, MAX_IDS

SELECTION_KINDS = [("ids", "Source task ids"), ("sample", "A seeded sample"), ("filter", "A filter")]
SCRIPTED_PROPOSER = {"kind": "scripted"}
SCRIPTED_JUDGES = {t: {"kind": "scripted", "temperament": t} for t in JUDGE_TEMPERAMENTS}
# The service's fields, as this form names them.
FIELD_OF = {"selection": "selection_kind", "proposers": "proposers", "judges": "judges"}


def _config_lines(text: str, role: str) -> list[dict[str, Any]]:
    configs = []
    for number, line in enumerate((line.strip() for line in text.splitlines()), start=1):
        if not line:
            continue
        if len(line) > MAX_CONFIG_CHARS:
            raise forms.ValidationError(f"line {number}: at most {MAX_CONFIG_CHARS} characters")
        try:
            config = json.loads(line)
        except (ValueError, RecursionError):
            raise forms.ValidationError(f"line {number}: not JSON (one {role} configuration a line)") from None
        if not isinstance(config, dict):
            raise forms.ValidationError(f"line {number}: a {role} configuration is a JSON object")
        configs.append(config)
    return configs


class GenerationLaunchForm(forms.Form):
    name = forms.CharField(max_length=200)
    selection_kind = forms.ChoiceField(choices=SELECTION_KINDS, initial="ids", widget=forms.RadioSelect)
    ids = forms.CharField(
        required=False,
        max_length=MAX_IDS * 201,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One source task id a line, e.g. bashbench-489407",
    )
    sample_size = forms.IntegerField(required=False, min_value=1, max_value=MAX_IDS, label="Sample size")
    sample_seed = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1, initial=0, label="Seed")
    filter_text = forms.CharField(required=False, max_length=200, label="Instruction contains")
    agents = forms.ModelMultipleChoiceField(
        queryset=Agent.objects.filter(active=True).exclude(kind=AgentKind.REFERENCE).order_by("kind", "name"),
        widget=forms.CheckboxSelectMultiple,
        label="Target agents",
    )
    scripted_proposer = forms.BooleanField(required=False, label=PROPOSER_NAME)
    proposers = forms.CharField(
        required=False,
        max_length=MAX_CONFIGS * (MAX_CONFIG_CHARS + 1),
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="More proposers: one JSON configuration a line; a key only by its environment variable (api_key_env)",
    )
    scripted_judges = forms.MultipleChoiceField(
        required=False,
        choices=[(t, f"{JUDGE_PREFIX} ({t})") for t in JUDGE_TEMPERAMENTS],
        widget=forms.CheckboxSelectMultiple,
    )
    judges = forms.CharField(
        required=False,
        max_length=MAX_CONFIGS * (MAX_CONFIG_CHARS + 1),
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="More judges: one JSON configuration a line",
    )
    budget = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_BUDGET,
        label="Iteration budget",
        help_text=f"Empty: {DEFAULT_BUDGET}",
    )
    perturbations = forms.MultipleChoiceField(
        choices=[(p, p.replace("_", " ")) for p in PERTURBATIONS],
        initial=list(PERTURBATIONS),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "choose at least one perturbation kind"},
    )
    budget_usd = forms.DecimalField(
        required=False,
        min_value=Decimal(0),
        max_digits=12,
        decimal_places=4,
        label="Budget (USD)",
        help_text="What the proposers', judges' and targets' model calls may cost in all; empty: no budget",
    )
    backend = forms.ChoiceField(choices=[(b.value, b.label) for b in LAUNCHABLE_BACKENDS])
    # Named for leaving it out, so that a post without the box (a script, an older page) checks.
    skip_reference_check = forms.BooleanField(
        required=False,
        label="No reference check",
        help_text="Kept candidates are not run with their safe and harmful references when the run ends",
    )

    def __init__(self, *args: Any, default_backend: str = "local", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["backend"].initial = default_backend

    def clean_proposers(self) -> list[dict[str, Any]]:
        return _config_lines(self.cleaned_data.get("proposers") or "", "proposer")

    def clean_judges(self) -> list[dict[str, Any]]:
        return _config_lines(self.cleaned_data.get("judges") or "", "judge")

    def selection(self) -> dict[str, Any]:
        data = self.cleaned_data
        kind = data["selection_kind"]
        if kind == "ids":
            return {"kind": "ids", "ids": [line.strip() for line in data["ids"].splitlines() if line.strip()]}
        if kind == "sample":
            selection: dict[str, Any] = {"kind": "sample", "seed": data.get("sample_seed") or 0}
            if data.get("sample_size") is not None:
                selection["size"] = data["sample_size"]
            return selection
        return {"kind": "filter", "text": data.get("filter_text") or ""}

    def proposer_configs(self) -> list[dict[str, Any]]:
        scripted = [dict(SCRIPTED_PROPOSER)] if self.cleaned_data.get("scripted_proposer") else []
        return scripted + self.cleaned_data["proposers"]

    def judge_configs(self) -> list[dict[str, Any]]:
        scripted = [dict(SCRIPTED_JUDGES[t]) for t in self.cleaned_data.get("scripted_judges") or []]
        return scripted + self.cleaned_data["judges"]

    def refused(self, field: str, message: str) -> None:
        """Put a service's refusal on the field it names (or above the form)."""
        name = FIELD_OF.get(field, field)
        self.add_error(name if name in self.fields else None, message)
