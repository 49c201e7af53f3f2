"""The query parameters of the candidate pool's pages and API: one rule each, one serializer for
a page and its API twin (`veriharm_site.queries`)."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.api_errors import MAX_INT32
from veriharm_site.queries import WholeNumberField

GROUPS = ("top", "bottom", "unranked")


class GroupSizeQuery(serializers.Serializer):
    k = WholeNumberField(low=1, high=MAX_INT32, help_text="Group size K (default VERIHARM_TOP_K)")


class RankingQuery(GroupSizeQuery):
    q = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=True, help_text="Search in ids and instructions"
    )
    group = serializers.ChoiceField(
        choices=GROUPS,
        required=False,
        allow_blank=True,
        default="",
        help_text="Only the top-K, bottom-K or unranked",
        error_messages={"invalid_choice": f"must be one of {', '.join(GROUPS)}"},
    )
    # selectors.FILTER_FIELDS: exact values of the ranking's columns
    perturbation = serializers.CharField(required=False, allow_blank=True, default="")
    risk_category = serializers.CharField(required=False, allow_blank=True, default="")
    target_agent = serializers.CharField(required=False, allow_blank=True, default="")
    proposer = serializers.CharField(required=False, allow_blank=True, default="")
