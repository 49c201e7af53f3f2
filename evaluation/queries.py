"""The query parameters of the evaluation pages (`veriharm_site.queries`): one rule each."""

from __future__ import annotations

from veriharm_site.queries import PageNumberQuery, optional_choice

from .models import TrialStatus


class RunTrialsQuery(PageNumberQuery):
    """A run's page: its trials, all or of one status, a page at a time."""

    status = optional_choice(dict(TrialStatus.choices), "Only the trials of this status")
