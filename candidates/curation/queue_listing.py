"""The review queue as a curator lists it: the top-K sorted, filtered and searched, with each
candidate's current decision and flags. The review page walks the same listing, so "next" after a
decision follows the order and filters the curator chose."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, QuerySet

from ..hooks.human_verdicts import human_majorities, human_state, study_candidate_ids
from ..models import Candidate, Verdict
from ..pool.selectors import candidate_ranking
from .selectors import ReviewQueue, review_queue

# Every order ends on the rank, so equal keys keep the ranking's order and pages are stable. The
# orders by decision time are applied to the rows (`_by_decision_time`): the queue holds the times.
_ORDER: dict[str, tuple[Any, ...]] = {
    "rank": ("rank",),
    "-rank": ("-rank",),
    "quality": (F("quality").asc(nulls_last=True), "rank"),
    "-quality": (F("quality").desc(nulls_last=True), "rank"),
    "decided": ("rank",),
    "-decided": ("rank",),
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


# What a row shows of the candidate itself; its decision and flags come from the queue.
_ROW_FIELDS = ("pk", "rank", "external_id", "quality", "source_task__external_id", "perturbation", "risk_category")


def _candidates(query: dict[str, Any], queue: ReviewQueue) -> QuerySet[Candidate]:
    ranked = candidate_ranking(
        search=query["q"],
        group="top",
        bounds=queue.bounds,
        perturbation=query["perturbation"],
        risk_category=query["risk_category"],
    )
    if query.get("study"):
        ranked = ranked.filter(pk__in=study_candidate_ids(query["study"]) or ())
    return ranked.order_by(*_ORDER[query["sort"] or "rank"])


def _by_decision_time(rows: list[QueueRow], latest_first: bool) -> list[QueueRow]:
    """Rows in rank order re-sorted by decision time, undecided ones last; a stable sort, so equal
    times keep the rank order (as the other orders do)."""
    decided = [(row.decided_at, row) for row in rows if row.decided_at is not None]
    decided.sort(key=lambda pair: pair[0], reverse=latest_first)
    return [row for _, row in decided] + [row for row in rows if row.decided_at is None]


def review_queue_listing(query: dict[str, Any], queue: ReviewQueue | None = None) -> QueueListing:
    """The top-K for `query` (a validated `ReviewQueueQuery`): one query of the rows, whose decisions
    and flags come from `queue` (`review_queue` at the same K, read here when not given). The
    database searches, filters by the candidates' own fields and sorts; the decision and flag
    filters and the order by decision time are applied here, to at most K rows."""
    if queue is None:
        queue = review_queue(query["k"])
    known = queue.by_pk
    rows = []
    for pk, rank, external_id, quality, source_task, perturbation, risk_category in _candidates(
        query, queue
    ).values_list(*_ROW_FIELDS):
        entry = known.get(pk)  # absent only if the ranking changed between the two reads
        rows.append(
            QueueRow(
                pk=pk,
                rank=rank or 0,
                external_id=external_id,
                quality=quality,
                source_task=source_task,
                perturbation=perturbation,
                risk_category=risk_category,
                verdict=entry.verdict if entry else "",
                reason=entry.reason if entry else "",
                decided_at=entry.decided_at if entry else None,
                flags=entry.flags if entry else (),
            )
        )
    if query["sort"] in ("decided", "-decided"):
        rows = _by_decision_time(rows, latest_first=query["sort"] == "-decided")
    state = query["decision"]
    if state == "undecided":
        rows = [row for row in rows if not row.verdict]
    elif state in _STATE:
        rows = [row for row in rows if row.verdict == _STATE[state]]
    if query["flagged"]:
        rows = [row for row in rows if row.flags]
    if query.get("human"):
        # Read for the rows the other filters left (at most K): the majority is a study result.
        majorities = human_majorities(row.pk for row in rows)
        rows = [row for row in rows if human_state(majorities.get(row.pk)) == query["human"]]
    return QueueListing(k=queue.k, rows=tuple(rows))
