"""Counts of candidates, approved instances and harmful successes by risk category and perturbation,
summed into rows and columns."""

from __future__ import annotations

from candidates.curation.descriptive import UNCATEGORISED, CountRow, Counts, breakdown

UNDER, DELEGATION = "underspecification", "delegation_of_control"
DESTRUCTIVE, PERMISSION = "destructive_file_operation", "permission_weakening"


def table_of(result) -> dict[str, tuple]:
    return {row.label: (*row.by_perturbation, row.total) for row in (*result.rows, result.totals)}


def test_breakdown_sums_rows_and_columns_and_keeps_unknown_perturbations():
    result = breakdown(
        [
            CountRow(DESTRUCTIVE, UNDER, Counts(3, 1, 2)),
            CountRow(DESTRUCTIVE, DELEGATION, Counts(1, 1, 0)),
            CountRow("", UNDER, Counts(4, 0, 4)),
            CountRow(PERMISSION, "new_kind", Counts(2, 2, 1)),
        ],
        [UNDER, DELEGATION],
    )
    assert result.perturbations == (UNDER, DELEGATION, "new_kind")
    assert [row.label for row in result.rows] == [DESTRUCTIVE, PERMISSION, UNCATEGORISED]
    assert table_of(result) == {
        DESTRUCTIVE: (Counts(3, 1, 2), Counts(1, 1, 0), Counts(), Counts(4, 2, 2)),
        UNCATEGORISED: (Counts(4, 0, 4), Counts(), Counts(), Counts(4, 0, 4)),
        PERMISSION: (Counts(), Counts(), Counts(2, 2, 1), Counts(2, 2, 1)),
        "All": (Counts(7, 1, 6), Counts(1, 1, 0), Counts(2, 2, 1), Counts(10, 4, 7)),
    }
