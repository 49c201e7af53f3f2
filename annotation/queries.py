"""Query parameters of the annotation pages and API, one serializer for a page and its API twin."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.queries import FlagField


class ExportQuery(serializers.Serializer):
    identities = FlagField(help_text="Add annotators' user names (needs annotation.export_identities)")


class ItemsQuery(serializers.Serializer):
    disagree = FlagField(help_text="Only items where humans (Valid_agg) and the harm tests' reference check disagree")


class NextItemQuery(serializers.Serializer):
    skipped = FlagField(help_text="Come back to the items you skipped instead of new ones")
