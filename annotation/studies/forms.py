"""Forms of the study pages: a new study, its members, guidelines, gold answers and adjudication."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import QueryDict

from ..models import DrawnFrom, Routing, StratifyBy
from ..write_rules.refusals import MAX_REASON
from .drawing import MAX_CHOSEN
from .sampling import random_seed
from .selectors.results import Answers
from .selectors.users import annotator_users
from .services import MAX_CLAIM_TIMEOUT_MINUTES, MAX_GROUP_SIZE, StudySpec

YES_NO = [("yes", "Yes"), ("no", "No")]


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Annotators see this name: do not mention groups or scores.")
    description = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Curators only.",
        max_length=settings.VERIHARM_MAX_DESCRIPTION_CHARS,
    )
    per_group = forms.IntegerField(min_value=1, max_value=MAX_GROUP_SIZE, initial=25, label="Items per group (n)")
    top_k = forms.IntegerField(
        min_value=1, max_value=MAX_GROUP_SIZE, label="Group size K", help_text="Sample from the top K and the bottom K."
    )
    stratify_by = forms.ChoiceField(choices=StratifyBy.choices, initial=StratifyBy.PERTURBATION, required=False)
    seed = forms.IntegerField(
        min_value=0, max_value=2**31 - 1, help_text="The same seed and pool give the same sample."
    )
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, initial=3)
    claim_timeout_minutes = forms.IntegerField(
        min_value=1,
        max_value=MAX_CLAIM_TIMEOUT_MINUTES,
        initial=30,
        label="Claim timeout (minutes)",
        help_text="An item claimed but not labelled within this time goes back to the pool.",
    )
    routing = forms.ChoiceField(
        choices=Routing.choices,
        initial=Routing.FIXED,
        required=False,
        help_text="2+1 needs 2 annotators per item and at least three in the study.",
    )
    gold_rate = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0,
        label="Gold share",
        required=False,
        help_text="The share of each annotator's items drawn from gold items (0 to 1).",
    )
    guidelines = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="With worked examples; shown to annotators before their first item.",
    )
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple
    )
    drawn_from = forms.ChoiceField(
        choices=DrawnFrom.choices,
        required=False,
        label="Draw the items from",
        help_text="A filter or chosen candidates make one stratum: K and stratification do not apply; chosen "
        "candidates are all taken, whatever n says.",
    )
    ranking_filter = forms.CharField(
        required=False,
        max_length=2000,
        label="Filter of the ranking",
        help_text="The ranking's query string, as its “New study from this filter” link carries it.",
    )
    candidates = forms.CharField(
        required=False,
        max_length=MAX_CHOSEN * 201,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Chosen candidates",
        help_text=f"Candidate ids, one a line (at most {MAX_CHOSEN}).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        users = annotator_users()
        _annotators_field(self).queryset = users
        self.fields["top_k"].initial = settings.VERIHARM_TOP_K
        if not self.is_bound:
            self.initial.setdefault("seed", random_seed())
            self.initial.setdefault("annotators", list(users))

    def spec(self) -> StudySpec:
        data = self.cleaned_data
        # Only what was given: the service holds the defaults.
        drawn: dict[str, Any] = {}
        if data["drawn_from"]:
            drawn["drawn_from"] = data["drawn_from"]
        if data["ranking_filter"]:
            drawn["ranking_filter"] = QueryDict(data["ranking_filter"]).dict()
        if data["candidates"].strip():
            drawn["candidate_ids"] = data["candidates"].split()
        return StudySpec(
            **drawn,
            name=data["name"],
            description=data["description"],
            seed=data["seed"],
            top_k=data["top_k"],
            per_group=data["per_group"],
            stratify_by=data["stratify_by"] or "",
            annotators_per_item=data["annotators_per_item"],
            claim_timeout_minutes=data["claim_timeout_minutes"],
            routing=data["routing"] or Routing.FIXED,
            gold_rate=data["gold_rate"] or 0.0,
            guidelines=data["guidelines"],
        )


class MembersForm(forms.Form):
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, exclude_ids: list[int] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _annotators_field(self).queryset = annotator_users().exclude(pk__in=exclude_ids or [])


def _annotators_field(form: forms.Form) -> forms.ModelMultipleChoiceField:
    field = form.fields["annotators"]
    assert isinstance(field, forms.ModelMultipleChoiceField)  # as both forms declare it
    return field


class GuidelinesForm(forms.Form):
    guidelines = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 10}),
        help_text="Worked examples help most. Annotators see this before their first item.",
    )
    gold_rate = forms.FloatField(
        min_value=0,
        max_value=1,
        label="Gold share",
        help_text="The share of each annotator's items drawn from gold items (0 to 1).",
    )


class AnswersForm(forms.Form):
    c1 = forms.ChoiceField(choices=YES_NO, widget=forms.RadioSelect)
    c2 = forms.ChoiceField(choices=YES_NO, widget=forms.RadioSelect)
    c3 = forms.ChoiceField(choices=YES_NO, widget=forms.RadioSelect)

    def answers(self) -> Answers:
        data = self.cleaned_data
        return Answers(data["c1"] == "yes", data["c2"] == "yes", data["c3"] == "yes")


class AdjudicationForm(AnswersForm):
    reason = forms.CharField(max_length=MAX_REASON, widget=forms.Textarea(attrs={"rows": 2}))
