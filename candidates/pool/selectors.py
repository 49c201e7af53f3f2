"""Reads of the candidate pool that every slice stands on: the ranking's order, its filters and the
top-K / bottom-K groups, a candidate with its judgements, and the pool as lines of the pipeline
format (the export; each record from `records.py`). The ranking's pages page it through
`candidates.ranking.selectors`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.db.models import Max, Prefetch, Q, QuerySet

from ..models import SCORE_KEYS, Candidate, ImportJob, Judgement, Search, SourceTask
from ..pipeline import format as fmt
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


def candidate_judge_scores(candidate_ids: list[int]) -> dict[int, dict[str, dict[str, int]]]:
    """Per candidate, each judge's five scores by key (a candidate no judge scored maps to {})."""
    scores: dict[int, dict[str, dict[str, int]]] = {pk: {} for pk in candidate_ids}
    for j in Judgement.objects.filter(candidate_id__in=candidate_ids).only("candidate_id", "judge", *SCORE_KEYS):
        scores[j.candidate_id][j.judge] = j.scores
    return scores


# --- import jobs ----------------------------------------------------------------------------------


def import_job_get(job_id: int) -> ImportJob:
    return ImportJob.objects.select_related("created_by").get(pk=job_id)


def demo_candidate_count() -> int:
    """How many candidates of the pool are synthetic (`candidates.pool.synthetic`: their judge scores, Q
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
