"""The query parameters of the ranking's page and API: one rule each, one serializer for a page and
its API twin (`veriharm_site.queries`). The group size K is read the same way by curation's pages."""

from __future__ import annotations

from rest_framework import serializers

from veriharm_site.api_errors import MAX_INT32
from veriharm_site.queries import WholeNumberField, optional_choice, page_number_field

from ..models import ImportJob

GROUPS = ("top", "bottom", "unranked")
# The ranking's orders (`candidates.pool.selectors.RANKING_ORDER`); each is read from an index (docs/curation.md).
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
    # `candidates.pool.selectors.FILTER_FIELDS`: exact values of the ranking's columns
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
