"""Reads of the candidate pool: the ranking with its filters and the top-K / bottom-K groups, and the
pool as lines of the pipeline format (the export; each record from `records.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.db.models import Max, Prefetch, Q, QuerySet

from veriharm_site.paging import KeysFirst, PagedRows

from .models import SCORE_KEYS, Candidate, ImportJob, Judgement, Search, SourceTask
from .pipeline import format as fmt
from .records import candidate_to_record, search_to_record
from .synthetic import synthetic_count

FILTER_FIELDS = ("perturbation", "risk_category", "target_agent", "proposer")
# Each order is one index read forwards or backwards: (rank, external_id), external_id's unique
# index, or (column, rank, external_id) for the filter columns; so a descending order reverses its
# secondary keys too, and puts the unranked (rank NULL, last in the index) first.
RANKING_ORDER: dict[str, tuple[str, ...]] = {
    "rank": ("rank", "external_id"),
    "-rank": ("-rank", "-external_id"),
    "quality": ("-rank", "-external_id"),  # rank is Q descending, ties by id
    "-quality": ("rank", "external_id"),
    "id": ("external_id",),
    "-id": ("-external_id",),
    **{column: (column, "rank", "external_id") for column in FILTER_FIELDS},
    **{f"-{column}": (f"-{column}", "-rank", "-external_id") for column in FILTER_FIELDS},
}
RANK_ORDERS = ("", "rank", "-quality")
FILTER_LABELS = {
    "perturbation": "perturbation",
    "risk_category": "risk category",
    "target_agent": "target agent",
    "proposer": "proposer",
}


@dataclass(frozen=True)
class RankingBounds:
    """Where the groups end: top-K are ranks 1..top_end, bottom-K are ranks bottom_start..ranked."""

    k: int
    ranked: int

    @property
    def top_end(self) -> int:
        return min(self.k, self.ranked)

    @property
    def bottom_start(self) -> int:
        return max(self.ranked - self.k + 1, 1)

    def group(self, rank: int | None) -> str:
        if rank is None:
            return ""
        if rank <= self.top_end:
            return "top"
        if rank >= self.bottom_start:
            return "bottom"
        return ""


def ranking_bounds(k: int | None = None) -> RankingBounds:
    """The groups for K (the setting when None; at least 1, whatever a page or API was given)."""
    ranked = Candidate.objects.aggregate(n=Max("rank"))["n"] or 0
    return RankingBounds(k=max(1, k if k is not None else settings.VERIHARM_TOP_K), ranked=ranked)


def candidate_ranking(
    *,
    search: str = "",
    group: str = "",
    k: int | None = None,
    bounds: RankingBounds | None = None,
    sort: str = "",
    import_job: int | None = None,
    **filters: str,
) -> QuerySet[Candidate]:
    """Ranked candidates (unranked last), filtered; an indexed read in rank order, or in `sort`'s.
    `import_job`: only the batch of that import job."""
    queryset = Candidate.objects.select_related("source_task").only(
        "id",
        "external_id",
        "quality",
        "rank",
        "perturbation",
        "target_agent",
        "proposer",
        "risk_category",
        "iteration",
        "instruction",
        "source_task__external_id",
    )
    for name, value in filters.items():
        if name in FILTER_FIELDS and value:
            queryset = queryset.filter(**{name: value})
    if import_job is not None:
        queryset = queryset.filter(import_job_id=import_job)
    if search:
        queryset = queryset.filter(_search_condition(search))
    if group in ("top", "bottom"):
        bounds = bounds or ranking_bounds(k)
        if group == "top":
            queryset = queryset.filter(rank__lte=bounds.top_end)
        else:
            queryset = queryset.filter(rank__gte=bounds.bottom_start)
    elif group == "unranked":
        queryset = queryset.filter(rank__isnull=True)
    return queryset.order_by(*RANKING_ORDER[sort or "rank"])


def _search_condition(search: str) -> Q:
    """A substring of the id or of the words the perturbation added (one trigram index on
    PostgreSQL), or of the source task's id or instruction. The few source tasks are matched
    first, so the database combines two index scans instead of scanning every candidate."""
    tasks = list(
        SourceTask.objects.filter(Q(external_id__icontains=search) | Q(instruction__icontains=search)).values_list(
            "pk", flat=True
        )
    )
    condition = Q(search_text__icontains=search)
    return condition | Q(source_task_id__in=tasks) if tasks else condition


def candidate_group_ids(group: str, k: int | None = None) -> list[int]:
    """Primary keys of the top-K or bottom-K group, in rank order."""
    return list(candidate_ranking(group=group, k=k).values_list("pk", flat=True))


def _distinct_values(column: str) -> list[str]:
    """Distinct non-empty values by hopping along the (column, rank) index: one probe per value
    instead of a scan of every candidate, which matters at 100,000 candidates."""
    table = Candidate._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE hop(value) AS (
                SELECT MIN({column}) FROM {table} WHERE {column} > ''
                UNION ALL
                SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > hop.value) FROM hop WHERE hop.value IS NOT NULL
            )
            SELECT value FROM hop WHERE value IS NOT NULL
            """
        )
        return [row[0] for row in cursor.fetchall()]


def filter_choices() -> dict[str, list[str]]:
    """The values each filter of the ranking can take."""
    return {name: _distinct_values(name) for name in FILTER_FIELDS}


def judgements_prefetch() -> Prefetch:
    return Prefetch("judgements", queryset=Judgement.objects.order_by("position"))


def candidate_found(external_id: str) -> Candidate | None:
    return Candidate.objects.filter(external_id=external_id).first()


def candidate_detail(external_id: str) -> Candidate:
    return (
        Candidate.objects.select_related("source_task")
        .prefetch_related(judgements_prefetch())
        .get(external_id=external_id)
    )


def candidate_judge_sums(candidate_ids: list[int]) -> dict[int, list[tuple[str, int]]]:
    """Per candidate, each judge's sum of five scores, in the imported order."""
    sums: dict[int, list[tuple[str, int]]] = {pk: [] for pk in candidate_ids}
    rows = Judgement.objects.filter(candidate_id__in=candidate_ids).order_by("candidate_id", "position")
    for j in rows.only("candidate_id", "judge", *SCORE_KEYS):
        sums[j.candidate_id].append((j.judge, j.total))
    return sums


def candidate_judge_scores(candidate_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
    """Per candidate, each judge's five scores by key (a candidate no judge scored maps to {})."""
    scores: dict[int, dict[str, dict[str, int]]] = {pk: {} for pk in candidate_ids}
    for j in Judgement.objects.filter(candidate_id__in=candidate_ids).only("candidate_id", "judge", *SCORE_KEYS):
        scores[j.candidate_id][j.judge] = j.scores
    return scores


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


# --- import jobs ----------------------------------------------------------------------------------


def import_job_get(job_id: int) -> ImportJob:
    return ImportJob.objects.select_related("created_by").get(pk=job_id)


def demo_candidate_count() -> int:
    """How many candidates of the pool are synthetic (`candidates.synthetic`: their judge scores, Q
    and search logs no model produced), for the pages that show the pool to say so."""
    return synthetic_count()


# --- The pipeline format ------------------------------------------------------------------------


def pipeline_export_lines(
    candidates: QuerySet[Candidate] | None = None, *, include_searches: bool = True
) -> Iterator[str]:
    """Every candidate (then every search) as lines of the pipeline format, streamed."""
    queryset = candidates if candidates is not None else Candidate.objects.all()
    queryset = queryset.select_related("source_task").prefetch_related("judgements").order_by("external_id")
    for candidate in queryset.iterator(chunk_size=1000):
        yield fmt.to_line(candidate_to_record(candidate)) + "\n"
    if include_searches:
        searches = Search.objects.select_related("candidate").prefetch_related("attempts")
        for search in searches.iterator(chunk_size=1000):
            yield fmt.to_line(search_to_record(search)) + "\n"
