"""Query parameters of the annotation pages and API, one serializer for a page and its API twin."""

from __future__ import annotations

from rest_framework import serializers

from candidates.queries import RankingQuery
from veriharm_site.queries import FlagField, optional_choice

from .drawing import MAX_CHOSEN
from .item_table import GROUPS, ITEM_SORTS, MAJORITIES
from .models import DrawnFrom


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


class NextItemQuery(serializers.Serializer):
    skipped = FlagField(help_text="Come back to the items you skipped instead of new ones")


class GuidelinesQuery(serializers.Serializer):
    """The guidelines page, opened from an item (`back`: that item's token, for the way back)."""

    back = serializers.RegexField(
        r"^[A-Za-z0-9_-]{1,24}$",
        required=False,
        allow_blank=True,
        default="",
        help_text="The token of the item to go back to",
        error_messages={"invalid": "must be the token of an item: 1 to 24 letters, digits, - or _"},
    )


class ItemPageQuery(serializers.Serializer):
    """An item's page: where its Submit goes next (the next item, or the list of own labels)."""

    then = optional_choice(("next", "labels"), "Where Submit goes: the next item or your labels")


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
