"""The review queue as a curator lists it: the top-K sorted, filtered and searched, with each
candidate's current decision and flags. The review page walks the same listing, so "next" after a
decision follows the order and filters the curator chose."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, QuerySet

from ..flags import candidate_flags
from ..models import Candidate, Verdict
from ..selectors import RankingBounds, candidate_ranking, ranking_bounds
from .review import latest_decision

# Every order ends on the rank, so equal keys keep the ranking's order and pages are stable.
_ORDER: dict[str, tuple[Any, ...]] = {
    "rank": ("rank",),
    "-rank": ("-rank",),
    "quality": (F("quality").asc(nulls_last=True), "rank"),
    "-quality": (F("quality").desc(nulls_last=True), "rank"),
    "decided": (F("latest_decided_at").asc(nulls_last=True), "rank"),
    "-decided": (F("latest_decided_at").desc(nulls_last=True), "rank"),
    "id": ("external_id",),
    "-id": ("-external_id",),
}
_STATE = {"approved": Verdict.APPROVE, "rejected": Verdict.REJECT}


@dataclass(frozen=True)
class QueueRow:
    pk: int
    rank: int
    external_id: str
    quality: float | None
    source_task: str
    perturbation: str
    risk_category: str
    verdict: str  # "" while undecided
    reason: str
    decided_at: datetime | None
    flags: tuple[str, ...]


@dataclass(frozen=True)
class QueueListing:
    k: int
    rows: tuple[QueueRow, ...]

    def _ranks(self) -> list[int]:
        return [row.rank for row in self.rows]

    def neighbour(self, rank: int, step: int) -> int | None:
        """The rank before (-1) or after (+1) this one in the listing; none for a rank it does not
        hold (outside the top-K, or filtered out)."""
        ranks = self._ranks()
        if rank not in ranks:
            return None
        index = ranks.index(rank) + step
        return ranks[index] if 0 <= index < len(ranks) else None

    def next_undecided(self, rank: int) -> int | None:
        """The first undecided entry after this rank in the listing, wrapping around to its start."""
        ranks = self._ranks()
        start = ranks.index(rank) + 1 if rank in ranks else 0
        ordered = self.rows[start:] + self.rows[:start]
        return next((row.rank for row in ordered if not row.verdict and row.rank != rank), None)


def _candidates(query: dict[str, Any], bounds: RankingBounds) -> QuerySet[Candidate]:
    ranked = candidate_ranking(
        search=query["q"],
        group="top",
        bounds=bounds,
        perturbation=query["perturbation"],
        risk_category=query["risk_category"],
    ).annotate(
        current_verdict=latest_decision("verdict"),
        current_reason=latest_decision("reason"),
        latest_decided_at=latest_decision("decided_at"),
    )
    state = query["decision"]
    if state == "undecided":
        ranked = ranked.filter(current_verdict__isnull=True)
    elif state in _STATE:
        ranked = ranked.filter(current_verdict=_STATE[state])
    return ranked.order_by(*_ORDER[query["sort"] or "rank"])


def review_queue_listing(query: dict[str, Any]) -> QueueListing:
    """The top-K for `query` (a validated `ReviewQueueQuery`): two queries and the flag sources'
    own, however many rows. Flags come from other apps in Python, so ?flagged=1 filters here."""
    bounds = ranking_bounds(query["k"])
    candidates = list(_candidates(query, bounds))
    flags = candidate_flags(c.pk for c in candidates)
    rows = tuple(
        QueueRow(
            pk=c.pk,
            rank=c.rank or 0,
            external_id=c.external_id,
            quality=c.quality,
            source_task=c.source_task.external_id,
            perturbation=c.perturbation,
            risk_category=c.risk_category,
            verdict=c.current_verdict or "",  # type: ignore[attr-defined]
            reason=c.current_reason or "",  # type: ignore[attr-defined]
            decided_at=c.latest_decided_at,  # type: ignore[attr-defined]
            flags=tuple(flags.get(c.pk, ())),
        )
        for c in candidates
    )
    if query["flagged"]:
        rows = tuple(row for row in rows if row.flags)
    return QueueListing(k=bounds.k, rows=rows)
