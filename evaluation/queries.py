"""The query parameters of the evaluation pages and API (`veriharm_site.queries`): one rule each,
one serializer for a page and its API twin."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.queries import optional_choice, page_number_field

from .models import TrialStatus

SEARCH_MAX_CHARS = 200


def search_field(help_text: str) -> serializers.CharField:
    """`?q=`: words to look for, case-insensitive; empty (or only spaces) means no search."""
    return serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=True,
        max_length=SEARCH_MAX_CHARS,
        help_text=help_text,
    )


class RunTrialsQuery(serializers.Serializer):
    """A run's trials, all or of one status, or those a search finds (the API's parameters; its
    pagination reads `page`)."""

    status = optional_choice(dict(TrialStatus.choices), "Only the trials of this status")
    q = search_field("Only the trials whose candidate id, a step's command or output, or a test's output holds this")


class RunTrialsPageQuery(RunTrialsQuery):
    """A run's page: its trials a page at a time."""

    page = page_number_field()


class TranscriptQuery(serializers.Serializer):
    """A trial page: its transcript a page of steps at a time, or the steps a search finds."""

    q = search_field("Only the steps whose command or output holds this")
    page = page_number_field()
