"""The query parameters of the candidate pool's pages and API: one rule each, one serializer for
a page and its API twin (`veriharm_site.queries`)."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.api_errors import MAX_INT32
from veriharm_site.queries import FlagField, WholeNumberField, optional_choice, page_number_field

from .human_verdicts import HUMAN_STATES, study_candidate_ids
from .models import ImportJob

GROUPS = ("top", "bottom", "unranked")
# The ranking's orders (selectors.RANKING_ORDER); each is read from an index (docs/curation.md).
RANKING_SORTS = {
    "rank": "rank, best first (the default)",
    "-rank": "rank, worst first (unranked first)",
    "quality": "Q, lowest first (unranked first)",
    "-quality": "Q, highest first",
    "id": "id, A to Z",
    "-id": "id, Z to A",
    "perturbation": "perturbation, A to Z, then rank",
    "-perturbation": "perturbation, Z to A, then rank from the worst",
    "risk_category": "risk category, A to Z, then rank",
    "-risk_category": "risk category, Z to A, then rank from the worst",
    "target_agent": "target agent, A to Z, then rank",
    "-target_agent": "target agent, Z to A, then rank from the worst",
    "proposer": "proposer, A to Z, then rank",
    "-proposer": "proposer, Z to A, then rank from the worst",
}


class GroupSizeQuery(serializers.Serializer):
    k = WholeNumberField(low=1, high=MAX_INT32, help_text="Group size K (default VERIHARM_TOP_K)")


class RankingQuery(GroupSizeQuery):
    q = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=True, help_text="Search in ids and instructions"
    )
    group = serializers.ChoiceField(
        choices=GROUPS,
        required=False,
        allow_blank=True,
        default="",
        help_text="Only the top-K, bottom-K or unranked",
        error_messages={"invalid_choice": f"must be one of {', '.join(GROUPS)}"},
    )
    # selectors.FILTER_FIELDS: exact values of the ranking's columns
    perturbation = serializers.CharField(required=False, allow_blank=True, default="")
    risk_category = serializers.CharField(required=False, allow_blank=True, default="")
    target_agent = serializers.CharField(required=False, allow_blank=True, default="")
    proposer = serializers.CharField(required=False, allow_blank=True, default="")
    sort = optional_choice(RANKING_SORTS, "Order of the ranking (default rank)")
    import_job = WholeNumberField(low=1, help_text="Only the candidates of this import job (the batch it imported)")

    def validate_import_job(self, value: int | None) -> int | None:
        if value is not None and not ImportJob.objects.filter(pk=value).exists():
            raise serializers.ValidationError(f"no import has the id {value}; open it from the import's own page")
        return value


class RankingPageQuery(RankingQuery):
    """The ranking page's parameters: the API's, and the page number its pagination reads."""

    page = page_number_field()


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
