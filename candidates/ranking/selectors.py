"""Reads of the ranking's pages and API: the ranking paged by rank range or by its keys first, and
each row's judge sums. The ranking itself, its filters and groups are the pool's
(`candidates.pool.selectors`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from veriharm_site.paging import KeysFirst, PagedRows

from ..models import SCORE_KEYS, Candidate, Judgement
from ..pool.selectors import FILTER_FIELDS, RankingBounds, candidate_ranking

# The orders whose rows lie in rank order, so a contiguous group pages by rank range.
RANK_ORDERS = ("", "rank", "-quality")


def candidate_judge_sums(candidate_ids: list[int]) -> dict[int, list[tuple[str, int]]]:
    """Per candidate, each judge's sum of five scores, in the imported order."""
    sums: dict[int, list[tuple[str, int]]] = {pk: [] for pk in candidate_ids}
    rows = Judgement.objects.filter(candidate_id__in=candidate_ids).order_by("candidate_id", "position")
    for j in rows.only("candidate_id", "judge", *SCORE_KEYS):
        sums[j.candidate_id].append((j.judge, j.total))
    return sums


class RankWindow(PagedRows[Candidate]):
    """A contiguous run of ranks (the whole ranking, the top-K or the bottom-K) that pages by
    rank range instead of OFFSET, so the last page of 100,000 candidates costs what the first does.
    Unranked candidates, when included, follow the ranked ones."""

    def __init__(self, queryset: QuerySet[Candidate], first: int, last: int, with_unranked: bool) -> None:
        self.queryset = queryset
        self.first, self.last = first, last
        self.with_unranked = with_unranked

    def _ranked_count(self) -> int:
        return max(0, self.last - self.first + 1)

    def _unranked(self) -> QuerySet[Candidate]:
        return self.queryset.filter(rank__isnull=True)

    def count(self) -> int:
        return self._ranked_count() + (self._unranked().count() if self.with_unranked else 0)

    def _window(self, window: slice) -> list[Candidate]:
        start, stop = window.start or 0, window.stop
        ranked = self._ranked_count()
        rows: list[Candidate] = []
        if start < ranked:
            low, high = self.first + start, self.first + min(stop, ranked) - 1
            rows = list(self.queryset.filter(rank__gte=low, rank__lte=high))
        if self.with_unranked and stop > ranked:
            rows += list(self._unranked()[max(0, start - ranked) : stop - ranked])
        return rows


def candidate_ranking_pageable(
    *,
    search: str = "",
    group: str = "",
    bounds: RankingBounds,
    sort: str = "",
    import_job: int | None = None,
    **filters: str,
) -> RankWindow | KeysFirst[Candidate]:
    """What a paginator should walk: a rank window when the selection is contiguous in rank,
    the page's ids first otherwise (each way of filtering has an index holding (filter, rank,
    id), so a deep page's ids come from an index-only scan; skipping 50,000 whole rows by OFFSET
    sorted them on disk)."""
    narrowed = (
        search
        or import_job is not None
        or any(filters.get(name) for name in FILTER_FIELDS)
        or group not in ("", "top", "bottom")
    )
    if narrowed or sort not in RANK_ORDERS:
        # k named, so that the type checker does not take one of the filters for it.
        ranked = candidate_ranking(
            search=search, group=group, k=None, bounds=bounds, sort=sort, import_job=import_job, **filters
        )
        return KeysFirst(ranked, key="external_id")
    base = candidate_ranking()
    if group == "top":
        return RankWindow(base, 1, bounds.top_end, with_unranked=False)
    if group == "bottom":
        return RankWindow(base, bounds.bottom_start, bounds.ranked, with_unranked=False)
    return RankWindow(base, 1, bounds.ranked, with_unranked=True)


def ranking_rows(query: Mapping[str, Any], bounds: RankingBounds) -> RankWindow | KeysFirst[Candidate]:
    """What the ranking page and its API page through for one parsed query (`RankingQuery`)."""
    return candidate_ranking_pageable(
        search=query["q"],
        group=query["group"],
        bounds=bounds,
        sort=query["sort"],
        import_job=query["import_job"],
        **{name: query[name] for name in FILTER_FIELDS},
    )
