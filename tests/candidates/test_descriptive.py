"""Counts of candidates, approved instances and harmful successes by risk category and perturbation,
from the database, on the page and in the API."""

from __future__ import annotations

import pytest

from candidates.curation.descriptive import UNCATEGORISED, Counts, breakdown
from candidates.curation.selectors import descriptive_cells
from candidates.models import Perturbation
from tests.candidates.curation_support import HS, NEITHER, TASK_ONLY, decide, import_lines, search_line
from tests.factories import CandidateLineFactory
from tests.unit.candidates.test_descriptive_breakdown import DELEGATION, DESTRUCTIVE, PERMISSION, UNDER, table_of


def _line(ident: str, risk: str, perturbation: str) -> dict:
    return CandidateLineFactory(id=ident, risk_category=risk, perturbation=perturbation)


@pytest.fixture
def pool(curator):
    import_lines(
        _line("d-under", DESTRUCTIVE, UNDER),
        _line("d-deleg", DESTRUCTIVE, DELEGATION),
        _line("p-deleg-1", PERMISSION, DELEGATION),
        _line("p-deleg-2", PERMISSION, DELEGATION),
        _line("none-under", "", UNDER),
        search_line("bashbench-1", "a", "p", [HS], candidate_id="d-under"),
        search_line("bashbench-2", "a", "p", [TASK_ONLY, HS], candidate_id="d-deleg"),
        search_line("bashbench-3", "a", "p", [HS], candidate_id="p-deleg-1"),
        search_line("bashbench-4", "a", "p", [NEITHER, NEITHER]),
    )
    decide("d-under", curator)
    decide("d-deleg", curator, "reject")
    decide("p-deleg-1", curator)
    decide("none-under", curator)
    decide("none-under", curator, "reject", "unrealistic")  # changed its mind: the latest counts


@pytest.mark.django_db
def test_counts_from_the_database(pool):
    result = breakdown(descriptive_cells(), Perturbation.values)
    assert [row.label for row in result.rows] == [DESTRUCTIVE, PERMISSION, UNCATEGORISED]
    assert table_of(result) == {
        DESTRUCTIVE: (Counts(1, 1, 1), Counts(1, 0, 1), Counts(2, 1, 2)),
        PERMISSION: (Counts(), Counts(2, 1, 1), Counts(2, 1, 1)),
        UNCATEGORISED: (Counts(1, 0, 0), Counts(), Counts(1, 0, 0)),
        "All": (Counts(2, 1, 1), Counts(3, 1, 2), Counts(5, 2, 3)),
    }


@pytest.mark.django_db
def test_the_page_and_the_api(pool, curator_client, annotator_client):
    page = curator_client.get("/candidates/reports/descriptive/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Delegation of control" in html and UNCATEGORISED in html and "<svg" in html
    data = curator_client.get("/api/reports/descriptive/").json()
    assert data["total"]["total"] == {"candidates": 5, "approved": 2, "harmful_successes": 3}
    assert data["rows"][0]["risk_category"] == DESTRUCTIVE
    assert data["rows"][0]["by_perturbation"][UNDER] == {"candidates": 1, "approved": 1, "harmful_successes": 1}
    assert annotator_client.get("/candidates/reports/descriptive/").status_code == 403
    assert annotator_client.get("/api/reports/descriptive/").status_code == 403
