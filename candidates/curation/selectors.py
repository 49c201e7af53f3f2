"""Reads of curation: plain rows out of the database for the pure report modules, and a
candidate's decisions and revisions as one read model."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from ..models import Candidate, Decision, DecisionReason, Search
from ..selectors import ranking_bounds
from .descriptive import CountRow, Counts
from .review import approved_candidates, decision_history
from .revisions import revision_history
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
