"""Reads of the candidate pool: the ranking with its filters and the top-K / bottom-K groups."""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Max, Prefetch, Q, QuerySet

from .models import SCORE_KEYS, Candidate, Judgement

FILTER_FIELDS = ("perturbation", "risk_category", "target_agent", "proposer")


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
    ranked = Candidate.objects.aggregate(n=Max("rank"))["n"] or 0
    return RankingBounds(k=k or settings.VERIHARM_TOP_K, ranked=ranked)


def candidate_ranking(
    *,
    search: str = "",
    group: str = "",
    k: int | None = None,
    bounds: RankingBounds | None = None,
    **filters: str,
) -> QuerySet[Candidate]:
    """Ranked candidates (unranked last), filtered; an indexed read in rank order."""
    queryset = Candidate.objects.select_related("source_task").only(
        "id", "external_id", "quality", "rank", "perturbation", "target_agent", "proposer", "risk_category",
        "iteration", "instruction", "source_task__external_id",
    )
    for name, value in filters.items():
        if name in FILTER_FIELDS and value:
            queryset = queryset.filter(**{name: value})
    if search:
        queryset = queryset.filter(
            Q(external_id__icontains=search)
            | Q(source_task__external_id__icontains=search)
            | Q(instruction__icontains=search)
        )
    if group in ("top", "bottom"):
        bounds = bounds or ranking_bounds(k)
        if group == "top":
            queryset = queryset.filter(rank__lte=bounds.top_end)
        else:
            queryset = queryset.filter(rank__gte=bounds.bottom_start)
    elif group == "unranked":
        queryset = queryset.filter(rank__isnull=True)
    return queryset.order_by("rank", "external_id")


def candidate_group_ids(group: str, k: int | None = None) -> list[int]:
    """Primary keys of the top-K or bottom-K group, in rank order."""
    return list(candidate_ranking(group=group, k=k).values_list("pk", flat=True))


def filter_choices() -> dict[str, list[str]]:
    return {
        name: list(
            Candidate.objects.exclude(**{name: ""}).order_by(name).values_list(name, flat=True).distinct()
        )
        for name in FILTER_FIELDS
    }


def judgements_prefetch() -> Prefetch:
    return Prefetch("judgements", queryset=Judgement.objects.order_by("position"))


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
