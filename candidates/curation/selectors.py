"""Reads of curation: the decisions (each candidate's current one, the approved set, a candidate's
history), the review queue (the top-K with each one's current verdict and flags), a candidate's
revisions with what each changed, plain rows out of the database for the pure report modules, and
a candidate's decisions and revisions as one read model. The writes are in review.py (decisions)
and revisions.py (edits)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.utils.safestring import SafeString, mark_safe

from veriharm_site.distinct_on import first_of_each

from ..diffs import diffing
from ..hooks.flags import candidate_flags
from ..models import Candidate, Decision, DecisionReason, Revision, Search, Verdict
from ..pool.selectors import RankingBounds, ranking_bounds
from .descriptive import CountRow, Counts
from .search_report import FunnelStage, SearchGroup, funnel


def search_rows() -> list[SearchGroup]:
    """Every imported search, counted by what Table 1 reads of it: proposer, target agent, budget
    and the iteration of its first harmful success (kept on the search by the import). One
    grouped read of an index, whatever the number of searches and attempts."""
    groups = (
        Search.objects.values_list("proposer", "target_agent", "budget", "first_success")
        .annotate(n=Count("*"))
        .order_by()
    )
    return [
        SearchGroup(proposer=proposer, target_agent=agent, budget=budget, first_success=first, searches=n)
        for proposer, agent, budget, first, n in groups
    ]


def search_funnel(k: int | None = None) -> list[FunnelStage]:
    """Searches -> harmful successes -> candidates -> top-K -> approved (current decisions)."""
    bounds = ranking_bounds(k)
    return funnel(
        [
            ("Searches", Search.objects.count()),
            ("Harmful successes", Search.objects.filter(succeeded=True).count()),
            ("Candidates", Candidate.objects.count()),
            (f"Top-{bounds.k}", bounds.top_end),
            ("Approved", approved_candidates().count()),
        ]
    )


def descriptive_cells() -> list[CountRow]:
    """Counts per (risk category, perturbation): candidates, approved, harmful successes.

    Harmful successes are the succeeded searches, attributed to the category and perturbation
    of the candidate each one kept.
    """
    cells: dict[tuple[str, str], Counts] = defaultdict(Counts)
    for risk, perturbation, n in (
        Candidate.objects.values_list("risk_category", "perturbation").annotate(n=Count("*")).order_by()
    ):
        cells[risk, perturbation] += Counts(candidates=n)
    approved = approved_candidates().values_list("risk_category", "perturbation").annotate(n=Count("*")).order_by()
    for risk, perturbation, n in approved:
        cells[risk, perturbation] += Counts(approved=n)
    successes = (
        # A success always kept a candidate (a constraint): saying so makes the join an inner one,
        # which the database reads from two indexes alone.
        Search.objects.filter(succeeded=True, candidate__isnull=False)
        .values_list("candidate__risk_category", "candidate__perturbation")
        .annotate(n=Count("*"))
        .order_by()
    )
    for risk, perturbation, n in successes:
        cells[risk, perturbation] += Counts(harmful_successes=n)
    return [CountRow(risk, perturbation, counts) for (risk, perturbation), counts in cells.items()]


@dataclass(frozen=True)
class CurationHistory:
    """The decisions and revisions shown on a candidate's page and in the review queue."""

    current: Decision | None
    decisions: list[Decision]  # latest first
    revisions: list[Any]
    reason_labels: dict[str, str]


def curation_history(candidate_id: int) -> CurationHistory:
    decisions = decision_history(candidate_id)
    return CurationHistory(
        current=decisions[0] if decisions else None,
        decisions=decisions,
        revisions=revision_history(candidate_id),
        reason_labels=dict(DecisionReason.choices),
    )


# --- Decisions and the review queue -------------------------------------------------------------


def current_decision_rows() -> QuerySet[Decision]:
    """Each decided candidate's latest decision (no later one exists). Read from the decisions,
    which are few, rather than by a subquery per candidate, which reads every candidate."""
    later = Decision.objects.filter(candidate_id=OuterRef("candidate_id")).filter(
        Q(decided_at__gt=OuterRef("decided_at")) | Q(decided_at=OuterRef("decided_at"), id__gt=OuterRef("id"))
    )
    return Decision.objects.filter(~Exists(later))


def approved_candidates() -> QuerySet[Candidate]:
    """Candidates whose current decision is an approval, in rank order (unranked last)."""
    approved = current_decision_rows().filter(verdict=Verdict.APPROVE).values("candidate_id")
    return Candidate.objects.filter(pk__in=approved).order_by(F("rank").asc(nulls_last=True), "external_id")


def current_decisions(candidate_ids: list[int]) -> dict[int, Decision]:
    current: dict[int, Decision] = {}
    rows = Decision.objects.filter(candidate_id__in=candidate_ids).select_related("decided_by")
    for decision in rows.order_by("candidate_id", "-decided_at", "-id"):
        current.setdefault(decision.candidate_id, decision)
    return current


def candidate_to_curate(external_id: str) -> Candidate | None:
    """The candidate with this id, with the revision a decision or an edit is checked against; None
    when no candidate has it."""
    return Candidate.objects.filter(external_id=external_id).only("pk", "external_id", "revision").first()


def decision_history(candidate_id: int) -> list[Decision]:
    """Every decision on the candidate, latest first."""
    return list(
        Decision.objects.filter(candidate_id=candidate_id).select_related("decided_by").order_by("-decided_at", "-id")
    )


@dataclass(frozen=True)
class QueueEntry:
    pk: int
    rank: int
    external_id: str
    verdict: str  # "" while undecided
    reason: str = ""
    decided_at: datetime | None = None
    flags: tuple[str, ...] = ()  # why its tests are flagged, in words (`candidates.hooks.flags`)


@dataclass(frozen=True)
class ReviewQueue:
    """The top-K in rank order with each one's current verdict."""

    bounds: RankingBounds
    entries: tuple[QueueEntry, ...]

    @property
    def k(self) -> int:
        return self.bounds.k

    @cached_property
    def by_pk(self) -> dict[int, QueueEntry]:
        return {e.pk: e for e in self.entries}

    def _count(self, verdict: str) -> int:
        return sum(1 for e in self.entries if e.verdict == verdict)

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def approved(self) -> int:
        return self._count(Verdict.APPROVE)

    @property
    def rejected(self) -> int:
        return self._count(Verdict.REJECT)

    @property
    def flagged(self) -> int:
        return sum(1 for e in self.entries if e.flags)

    @property
    def decided(self) -> int:
        return self.approved + self.rejected

    @property
    def share_decided(self) -> float:
        return self.decided / self.total if self.total else 0.0

    def first_undecided(self) -> int | None:
        return next((e.rank for e in self.entries if not e.verdict), None)

    def next_undecided(self, rank: int) -> int | None:
        """The first undecided entry after `rank`, wrapping around to the start."""
        after = [e.rank for e in self.entries if not e.verdict and e.rank > rank]
        return after[0] if after else self.first_undecided()

    def contains(self, rank: int) -> bool:
        return bool(self.entries) and self.entries[0].rank <= rank <= self.entries[-1].rank

    def neighbour(self, rank: int, step: int) -> int | None:
        target = rank + step
        return target if self.contains(target) else None


def _current_decisions_up_to(top_end: int) -> dict[int, tuple[str, str, datetime]]:
    """(verdict, reason, decided_at) of the current decision of each decided candidate ranked up to
    `top_end`: one pass over the decisions (DISTINCT ON the latest), not a subquery per candidate."""
    ordered = (
        Decision.objects.filter(candidate__rank__lte=top_end)
        .order_by("candidate_id", "-decided_at", "-id")
        .values_list("candidate_id", "verdict", "reason", "decided_at")
    )
    latest = first_of_each(ordered, ("candidate_id",), key=lambda row: row[0])
    return {pk: (verdict, reason, decided_at) for pk, verdict, reason, decided_at in latest}


def review_queue(k: int | None = None) -> ReviewQueue:
    """The top-K with each one's current decision and flags: four queries, however large K is."""
    bounds = ranking_bounds(k)
    rows = list(
        Candidate.objects.filter(rank__lte=bounds.top_end).order_by("rank").values_list("pk", "rank", "external_id")
    )
    # As a Mapping (covariant), so that an undecided default's None fits the decided_at slot.
    decisions: Mapping[int, tuple[str, str, datetime | None]] = _current_decisions_up_to(bounds.top_end)
    flags = candidate_flags(pk for pk, *_ in rows)
    undecided = ("", "", None)
    return ReviewQueue(
        bounds=bounds,
        entries=tuple(
            QueueEntry(pk, rank or 0, ext, *decisions.get(pk, undecided), flags=tuple(flags.get(pk, ())))
            for pk, rank, ext in rows
        ),
    )


def approvals_with_warning(candidate_ids: list[int]) -> dict[int, Decision]:
    """The current decision of each of these candidates that was approved despite a warning."""
    return {
        pk: d for pk, d in current_decisions(candidate_ids).items() if d.verdict == Verdict.APPROVE and d.flag_warning
    }


def candidate_at_rank(rank: int) -> Candidate:
    return Candidate.objects.only("pk", "external_id", "revision", "rank").get(rank=rank)


# --- Revisions -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RevisionView:
    """A revision with what it changed against the one before (inline diffs, None if unchanged)."""

    revision: Revision
    instruction_diff_html: SafeString | None
    harm_test_diff_html: SafeString | None


def _inline_diff(before: str, after: str) -> SafeString | None:
    if before == after:
        return None
    # segments_html escapes every segment's text.
    return mark_safe(diffing.segments_html(diffing.diff_segments(before, after)))


def candidate_revisions(candidate_id: int) -> list[Revision]:
    """Every stored revision, oldest first; empty for a candidate never edited."""
    return list(Revision.objects.filter(candidate_id=candidate_id).select_related("author").order_by("number"))


def revision_history(candidate_id: int) -> list[RevisionView]:
    """Latest first; each edit with the words it changed (diff against the revision before)."""
    revisions = candidate_revisions(candidate_id)
    views = [
        RevisionView(
            revision=after,
            instruction_diff_html=_inline_diff(before.instruction, after.instruction) if before else None,
            harm_test_diff_html=_inline_diff(before.harm_test, after.harm_test) if before else None,
        )
        for before, after in zip([None, *revisions], revisions)
    ]
    return views[::-1]
