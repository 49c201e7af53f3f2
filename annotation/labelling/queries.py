"""Query parameters of the annotator's labelling pages and API."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.queries import FlagField, optional_choice


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
