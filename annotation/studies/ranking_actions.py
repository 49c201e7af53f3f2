"""The ranking page's way into a new study drawn from its filter or from the rows ticked on it."""

from __future__ import annotations

from django.urls import reverse

from candidates.hooks.ranking_actions import RankingAction

from ..models import DrawnFrom


def _filter_url(querystring: str) -> str:
    url = f"{reverse('annotation:study-create')}?drawn_from={DrawnFrom.FILTER}"
    return f"{url}&{querystring}" if querystring else url


def _rows_url() -> str:
    return reverse("annotation:study-create")


STUDY_FROM_RANKING = RankingAction(
    permission="annotation.manage_studies",
    filter_label="New study from this filter",
    filter_url=_filter_url,
    rows_label="New study from the ticked rows",
    rows_url=_rows_url,
    rows_fields={"drawn_from": DrawnFrom.CHOSEN},
)
