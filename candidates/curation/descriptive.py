"""The descriptive breakdown (the paper's Table 6 kind of view): counts of candidates, approved
instances and harmful successes by risk category and perturbation type (pure)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

UNCATEGORISED = "(no risk category)"


@dataclass(frozen=True)
class Counts:
    candidates: int = 0
    approved: int = 0
    harmful_successes: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.candidates + other.candidates,
            self.approved + other.approved,
            self.harmful_successes + other.harmful_successes,
        )


@dataclass(frozen=True)
class CountRow:
    """Counts of one (risk category, perturbation) cell, as the database aggregates them."""

    risk_category: str
    perturbation: str
    counts: Counts


@dataclass(frozen=True)
class BreakdownRow:
    label: str
    by_perturbation: tuple[Counts, ...]  # in the order of Breakdown.perturbations
    total: Counts


@dataclass(frozen=True)
class Breakdown:
    perturbations: tuple[str, ...]
    rows: tuple[BreakdownRow, ...]  # one per risk category, most candidates first, uncategorised last
    totals: BreakdownRow


def _sum(counts: Iterable[Counts]) -> Counts:
    total = Counts()
    for c in counts:
        total = total + c
    return total


def breakdown(cells: Iterable[CountRow], perturbations: Sequence[str]) -> Breakdown:
    """Rows by risk category, columns by perturbation; perturbations outside `perturbations`
    are kept as extra columns so that no count is dropped."""
    grid: dict[str, dict[str, Counts]] = defaultdict(lambda: defaultdict(Counts))
    columns = list(perturbations)
    for cell in cells:
        if cell.perturbation not in columns:
            columns.append(cell.perturbation)
        row = grid[cell.risk_category or UNCATEGORISED]
        row[cell.perturbation] = row[cell.perturbation] + cell.counts

    def make(label: str, by_column: dict[str, Counts]) -> BreakdownRow:
        values = tuple(by_column.get(column, Counts()) for column in columns)
        return BreakdownRow(label=label, by_perturbation=values, total=_sum(values))

    # Most candidates first; the uncategorised rest last, whatever its size.
    rows = sorted(
        (make(label, by_column) for label, by_column in grid.items()),
        key=lambda r: (r.label == UNCATEGORISED, -r.total.candidates, r.label),
    )
    column_totals: dict[str, Counts] = {
        column: _sum(row.by_perturbation[i] for row in rows) for i, column in enumerate(columns)
    }
    return Breakdown(perturbations=tuple(columns), rows=tuple(rows), totals=make("All", column_totals))
