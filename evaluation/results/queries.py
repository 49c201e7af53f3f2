"""The query parameters of a trial's page: its transcript, searched and paged."""

from __future__ import annotations

from rest_framework import serializers

from evaluation.runs.queries import search_field
from veriharm_site.queries import page_number_field


class TranscriptQuery(serializers.Serializer):
    """A trial page: its transcript a page of steps at a time, or the steps a search finds."""

    q = search_field("Only the steps whose command or output holds this")
    page = page_number_field()
