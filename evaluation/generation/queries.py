"""The generation pages' query parameters (`veriharm_site.queries`): a bad one is refused naming it."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.queries import WholeNumberField

from .models import MAX_BUDGET


class SearchPageQuery(serializers.Serializer):
    """A search's page: which iteration it shows in full (absent: the kept one, or the latest)."""

    iteration = WholeNumberField(low=1, high=MAX_BUDGET, help_text="The iteration shown in full, from 1")
