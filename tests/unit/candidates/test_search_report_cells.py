"""Table 1 and the funnel against a hand computation of every cell on hand-built search records."""

from __future__ import annotations

from fractions import Fraction

import pytest

from candidates.curation.search_report import ALL, SearchRow, funnel, search_report
from tests.candidates.curation_support import HARM_ONLY, HS, NEITHER, TASK_ONLY

P1, P2 = "claude-opus-4-7", "gpt-5.5"
A, B = "kimi-k2.5", "qwen3-235b"

# (proposer, agent, attempts, budget). The first success of each is noted on the right.
SEARCHES = [
    (P1, A, [HS], 3),  # 1
    (P1, A, [TASK_ONLY, HS], 3),  # 2
    (P1, A, [HARM_ONLY, TASK_ONLY, NEITHER], 3),  # none
    (P1, A, [NEITHER, NEITHER, HS], 3),  # 3
    (P1, B, [TASK_ONLY, HS], 3),  # 2
    (P1, B, [NEITHER, NEITHER, NEITHER], 3),  # none
    (P2, A, [HS], 3),  # 1
    (P2, A, [HS], 3),  # 1
    (P2, A, [TASK_ONLY, HARM_ONLY], 2),  # none (budget 2)
    (P2, B, [HARM_ONLY, HS], 3),  # 2
]

F = Fraction
# Every cell, by hand from the notes above: searches, successes, success rate, mean iteration of the
# first success, Iter-1..3 as shares of all searches, revised successes as a share of successes.
EXPECTED = {
    (P1, A): (4, 3, F(3, 4), F(6, 3), (F(1, 4), F(1, 4), F(1, 4)), F(2, 3)),
    (P1, B): (2, 1, F(1, 2), F(2, 1), (F(0), F(1, 2), F(0)), F(1, 1)),
    (P1, ALL): (6, 4, F(4, 6), F(8, 4), (F(1, 6), F(2, 6), F(1, 6)), F(3, 4)),
    (P2, A): (3, 2, F(2, 3), F(2, 2), (F(2, 3), F(0), F(0)), F(0, 2)),
    (P2, B): (1, 1, F(1, 1), F(2, 1), (F(0), F(1, 1), F(0)), F(1, 1)),
    (P2, ALL): (4, 3, F(3, 4), F(4, 3), (F(2, 4), F(1, 4), F(0)), F(1, 3)),
    (ALL, A): (7, 5, F(5, 7), F(8, 5), (F(3, 7), F(1, 7), F(1, 7)), F(2, 5)),
    (ALL, B): (3, 2, F(2, 3), F(4, 2), (F(0), F(2, 3), F(0)), F(2, 2)),
    (ALL, ALL): (10, 7, F(7, 10), F(12, 7), (F(3, 10), F(3, 10), F(1, 10)), F(4, 7)),
}


def rows() -> list[SearchRow]:
    return [SearchRow(p, a, budget, tuple(attempts)) for p, a, attempts, budget in SEARCHES]


def cells_of(row) -> tuple:
    return (row.searches, row.successes, row.success_rate, row.mean_iteration, row.iteration_shares, row.revised_share)


def cells(report) -> dict[tuple[str, str], tuple]:
    out = {(row.proposer, row.target_agent): cells_of(row) for b in report.blocks for row in (*b.rows, b.overall)}
    # The grand overall row is also the last block's overall row.
    assert cells_of(report.overall) == out[ALL, ALL]
    return out


def assert_matches(report) -> None:
    got = cells(report)
    assert set(got) == set(EXPECTED)
    for key, (searches, successes, rate, mean, shares, revised) in EXPECTED.items():
        g = got[key]
        assert (g[0], g[1]) == (searches, successes), key
        assert g[2] == pytest.approx(float(rate)), key
        assert g[3] == pytest.approx(float(mean)), key
        assert g[4] == pytest.approx(tuple(float(s) for s in shares)), key
        assert g[5] == pytest.approx(float(revised)), key
        # The paper's identity: the Iter-k columns add up to the success rate.
        assert sum(g[4]) == pytest.approx(g[2]), key


def test_every_cell_matches_the_hand_computation():
    report = search_report(rows())
    assert report.budget == 3 and list(report.iterations) == [1, 2, 3]
    assert [b.proposer for b in report.blocks] == [P1, P2, ALL]
    assert [r.target_agent for r in report.blocks[0].rows] == [A, B]
    assert_matches(report)


def test_a_success_after_the_budget_does_not_count():
    late = SearchRow(P1, A, 2, (NEITHER, NEITHER, HS))
    report = search_report([late])
    assert report.overall.successes == 0 and report.overall.success_rate == 0
    assert report.overall.mean_iteration is None and report.overall.revised_share is None


def test_one_proposer_has_no_cross_proposer_block_and_no_searches_give_an_empty_report():
    report = search_report([SearchRow(P1, A, 5, (HS,))])
    assert [b.proposer for b in report.blocks] == [P1] and report.budget == 5
    assert report.overall.iteration_shares == (1.0, 0.0, 0.0, 0.0, 0.0)
    empty = search_report([])
    assert empty.blocks == () and empty.searches == 0 and empty.overall.success_rate is None


def test_funnel_shares():
    stages = funnel([("Searches", 10), ("Harmful successes", 7), ("Candidates", 8), ("Top-5", 5), ("Approved", 0)])
    assert [(s.count, s.of_previous, s.of_first) for s in stages] == [
        (10, None, 1.0),
        (7, 0.7, 0.7),
        (8, pytest.approx(8 / 7), 0.8),
        (5, 5 / 8, 0.5),
        (0, 0.0, 0.0),
    ]
    assert funnel([("Searches", 0), ("Approved", 0)])[1].of_previous is None
