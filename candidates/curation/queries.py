"""The query parameters of curation's pages and API (the review queue, its order, filters and
search; the reports' group size): one rule each, one serializer for a page and its API twin
(`veriharm_site.queries`)."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.queries import FlagField, WholeNumberField, optional_choice, page_number_field

from ..hooks.human_verdicts import HUMAN_STATES, study_candidate_ids
from ..ranking.queries import GroupSizeQuery

REVIEW_SORTS = {
    "rank": "rank, best first",
    "-rank": "rank, worst first",
    "quality": "Q, lowest first",
    "-quality": "Q, highest first",
    "decided": "latest decision, oldest first (undecided last)",
    "-decided": "latest decision, newest first (undecided last)",
    "id": "id, A to Z",
    "-id": "id, Z to A",
}
DECISION_STATES = ("undecided", "approved", "rejected")


class ReviewQueueQuery(GroupSizeQuery):
    """The review queue's order, filters and search: the page, the review page's neighbours and the
    API read the same parameters."""

    sort = optional_choice(REVIEW_SORTS, "Order of the queue (default rank)")
    decision = optional_choice(DECISION_STATES, "Only candidates whose current decision is this")
    flagged = FlagField(help_text="Only candidates flagged by the reference check")
    q = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=200,
        help_text="Search in ids, the words the perturbation added, and source tasks",
    )
    perturbation = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    risk_category = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    study = WholeNumberField(low=1, help_text="Only the candidates this study sampled")
    human = optional_choice(
        HUMAN_STATES, "Only candidates whose human majority is this (unlabelled: no study has labelled it yet)"
    )

    def validate_study(self, value: int | None) -> int | None:
        if value is not None and study_candidate_ids(value) is None:
            raise serializers.ValidationError(f"no study has the id {value}; pick one from the list")
        return value


class ReviewQueuePageQuery(ReviewQueueQuery):
    """The queue page's parameters: the API's (which lists the whole queue), and the page number."""

    page = page_number_field()
