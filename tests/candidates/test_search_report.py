"""Table 1 and the funnel of imported searches, on the page and in the API, against the hand computation
of tests/unit/candidates/test_search_report_cells.py."""

from __future__ import annotations

import pytest

from candidates.curation.search_report import search_report
from tests.candidates.curation_support import HS, decide, import_lines, search_line
from tests.factories import CandidateLineFactory
from tests.unit.candidates.test_search_report_cells import P2, SEARCHES, assert_matches


def _import_hand_built_set() -> list[str]:
    """The same searches through the pipeline format; every success keeps its own candidate."""
    lines, candidate_ids = [], []
    for index, (proposer, agent, attempts, budget) in enumerate(SEARCHES):
        candidate_id = None
        if attempts[-1] == HS:
            line = CandidateLineFactory(
                id=f"hand-{index:02d}",
                provenance={"target_agent": agent, "proposer": proposer, "iteration": len(attempts)},
                scores=(5, 5, 5, 5, 5 - index % 4),
            )
            lines.append(line)
            candidate_id = line["id"]
            candidate_ids.append(candidate_id)
        lines.append(
            search_line(f"bashbench-hand-{index}", agent, proposer, attempts, budget=budget, candidate_id=candidate_id)
        )
    # One candidate without a search record and without judges: in the pool, not ranked.
    lines.append(CandidateLineFactory(id="hand-unjudged", judgements=[]))
    import_lines(*lines)
    return candidate_ids


@pytest.mark.django_db
def test_the_report_from_imported_searches(curator):
    from candidates.curation.selectors import search_funnel, search_rows

    candidate_ids = _import_hand_built_set()
    assert_matches(search_report(search_rows()))
    decide(candidate_ids[0], curator)
    decide(candidate_ids[1], curator, "reject")
    stages = search_funnel(k=5)
    assert [(s.label, s.count) for s in stages] == [
        ("Searches", 10),
        ("Harmful successes", 7),
        ("Candidates", 8),
        ("Top-5", 5),
        ("Approved", 1),
    ]


@pytest.mark.django_db
def test_the_page_and_the_api_show_the_same_figures(curator_client):
    _import_hand_built_set()
    page = curator_client.get("/candidates/reports/search/").content.decode()
    # P1 overall: 4 of 6 = 66.7%, mean 2.00, Iter-1..3 16.7% 33.3% 16.7%, revised 3 of 4 = 75.0%.
    for text in ("66.7%", "2.00", "16.7%", "33.3%", "75.0%", "Iter-3", "<svg", "All proposers"):
        assert text in page
    data = curator_client.get("/api/reports/search/").json()
    assert data["budget"] == 3
    overall = data["overall"]
    assert (overall["searches"], overall["successes"], overall["iteration_counts"]) == (10, 7, [3, 3, 1])
    assert overall["mean_iteration"] == pytest.approx(12 / 7)
    p2 = data["blocks"][1]
    assert p2["proposer"] == P2 and p2["overall"]["revised_share"] == pytest.approx(1 / 3)
    assert [s["count"] for s in data["funnel"]] == [10, 7, 8, 7, 0]


@pytest.mark.django_db
def test_success_rates_carry_wilson_intervals(curator_client):
    from tests.unit.test_intervals import hand_wilson

    _import_hand_built_set()
    page = curator_client.get("/candidates/reports/search/").content.decode()
    # P1 overall: 4 of 6 searches succeeded, 3 of those 4 after a revision.
    for k, n in ((4, 6), (3, 4)):
        low, high = hand_wilson(k, n)
        assert f'data-field="interval">{low * 100:.1f}–{high * 100:.1f}%</div>' in page
    overall = curator_client.get("/api/reports/search/").json()["overall"]
    # Every proposer: 7 of 10.
    assert (overall["success_rate_ci_low"], overall["success_rate_ci_high"]) == pytest.approx(hand_wilson(7, 10))


@pytest.mark.django_db
def test_each_iteration_share_carries_its_wilson_interval(curator_client):
    from tests.unit.test_intervals import hand_wilson

    _import_hand_built_set()
    page = curator_client.get("/candidates/reports/search/").content.decode()
    # Every proposer: first successes at iterations 1, 2, 3 in 3, 3 and 1 of 10 searches.
    for k in (3, 1):
        low, high = hand_wilson(k, 10)
        assert f'title="{k} of 10 searches">' in page
        assert f'data-field="interval">{low * 100:.1f}–{high * 100:.1f}%</div>' in page
    overall = curator_client.get("/api/reports/search/").json()["overall"]
    cis = [(ci["low"], ci["high"]) for ci in overall["iteration_share_cis"]]
    assert cis == [pytest.approx(hand_wilson(k, 10)) for k in (3, 3, 1)]
