"""Query parameters of the study pages and API, one serializer for a page and its API twin."""

from __future__ import annotations

from rest_framework import serializers

from candidates.ranking.queries import RankingQuery
from veriharm_site.queries import FlagField, optional_choice

from ..models import DrawnFrom
from .drawing import MAX_CHOSEN
from .item_table import GROUPS, ITEM_SORTS, MAJORITIES


class ExportQuery(serializers.Serializer):
    identities = FlagField(help_text="Add annotators' user names (needs annotation.export_identities)")


class ItemsQuery(serializers.Serializer):
    """The results table of a study (the page) and its items (the API): order, filters, search."""

    disagree = FlagField(help_text="Only items where humans (Valid_agg) and the harm tests' reference check disagree")
    sort = optional_choice(ITEM_SORTS, "Order of the items (default item number)")
    majority = optional_choice(
        MAJORITIES, "Only items whose majority Valid_agg is valid, invalid, or not reached yet (none)"
    )
    disputed = FlagField(help_text="Only items whose annotators did not all give the same answers")
    gold = FlagField(help_text="Only gold items")
    adjudicated = FlagField(help_text="Only items a curator adjudicated")
    group = optional_choice(GROUPS, "Only the top-K or the bottom-K items")
    q = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=200,
        help_text="Search in candidate and source task ids",
    )


class StudyDrawQuery(RankingQuery):
    """The new-study page, opened from the ranking: its filter (the ranking's own parameters) or
    the rows ticked on it, which the form then carries."""

    drawn_from = optional_choice(tuple(DrawnFrom.values), "How the items are drawn (default: top-K and bottom-K)")
    candidates = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        default=list,
        max_length=MAX_CHOSEN,
        help_text="The ids of the chosen candidates",
    )
