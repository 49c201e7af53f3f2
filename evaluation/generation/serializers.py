"""The generation API's input and output shapes: types and lengths here, rules in the service."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import serializers

from candidates.pipeline.models import PERTURBATIONS

from .models import BACKENDS, MAX_BUDGET
from .states import RunStatus, SearchEnding, SearchStatus

MAX_CONFIG_CHARS = 10_000
MAX_CONFIGS = 20
MAX_IDS = 5000


class SelectionSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["ids", "sample", "filter"])
    ids = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=MAX_IDS, help_text="kind ids"
    )
    size = serializers.IntegerField(required=False, min_value=1, max_value=MAX_IDS, help_text="kind sample")
    seed = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1, help_text="kind sample")
    text = serializers.CharField(required=False, max_length=200, help_text="kind filter")


def _configs(value: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for config in value:
        try:
            size = len(json.dumps(config))
        except (ValueError, RecursionError):
            raise serializers.ValidationError("a configuration must be plain JSON") from None
        if size > MAX_CONFIG_CHARS:
            raise serializers.ValidationError(f"a configuration may hold at most {MAX_CONFIG_CHARS} characters")
    return value


class GenerationLaunchSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    selection = SelectionSerializer()
    agents = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**31 - 1), max_length=100, help_text="Agent ids"
    )
    proposers = serializers.ListField(
        child=serializers.DictField(),
        max_length=MAX_CONFIGS,
        help_text='Configurations, e.g. {"kind": "scripted"}; a key by its environment variable only (api_key_env)',
    )
    judges = serializers.ListField(child=serializers.DictField(), max_length=MAX_CONFIGS)
    budget = serializers.IntegerField(required=False, min_value=1, max_value=MAX_BUDGET, help_text="Default 5")
    perturbations = serializers.ListField(
        child=serializers.ChoiceField(choices=list(PERTURBATIONS)), required=False, max_length=len(PERTURBATIONS)
    )
    budget_usd = serializers.DecimalField(max_digits=12, decimal_places=4, min_value=0, required=False, allow_null=True)
    backend = serializers.ChoiceField(choices=list(BACKENDS), required=False)
    reference_check = serializers.BooleanField(required=False)

    def validate_proposers(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _configs(value)

    def validate_judges(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _configs(value)


class GenerationSearchSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    agent = serializers.CharField()
    source_task_id = serializers.CharField()
    proposer = serializers.CharField()
    status = serializers.ChoiceField(choices=SearchStatus.choices)
    ending = serializers.ChoiceField(choices=[("", "")] + list(SearchEnding.choices))
    kept_iteration = serializers.IntegerField(allow_null=True)
    candidate_id = serializers.CharField(help_text="The candidate stored from it; empty when none was kept")
    steps = serializers.IntegerField(help_text="Steps recorded so far")
    error = serializers.CharField()


class GenerationRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    budget = serializers.IntegerField()
    perturbations = serializers.ListField(child=serializers.CharField())
    budget_usd = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    spent_usd = serializers.DecimalField(max_digits=12, decimal_places=4)
    backend = serializers.CharField()
    proposers = serializers.ListField(child=serializers.CharField(), help_text="Their names")
    judges = serializers.ListField(child=serializers.CharField(), help_text="Their names")
    reference_run = serializers.IntegerField(allow_null=True, help_text="The kept candidates' reference check")
    note = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    cancelled_at = serializers.DateTimeField(allow_null=True)
    searches = GenerationSearchSerializer(many=True)
