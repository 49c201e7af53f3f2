"""The query parameters of the evaluation pages and API (`veriharm_site.queries`): one rule each,
one serializer for a page and its API twin."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.queries import optional_choice, page_number_field

from .models import TrialStatus


class RunTrialsQuery(serializers.Serializer):
    """A run's trials, all or of one status (the API's parameters; its pagination reads `page`)."""

    status = optional_choice(dict(TrialStatus.choices), "Only the trials of this status")


class RunTrialsPageQuery(RunTrialsQuery):
    """A run's page: its trials a page at a time."""

    page = page_number_field()
