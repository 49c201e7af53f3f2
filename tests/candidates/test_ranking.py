"""Q(c) and the ranking, against hand computations."""

import pytest

from candidates.pool.selectors import candidate_ranking, ranking_bounds
from tests.factories import CandidateLineFactory, jsonl, with_judges
from tests.importing import candidate_import_streams

pytestmark = pytest.mark.django_db


def import_lines(*lines):
    return candidate_import_streams([("t.jsonl", jsonl(*lines).splitlines())])


def test_q_is_the_mean_over_judges_of_each_judges_sum(db):
    import_lines(with_judges(CandidateLineFactory(id="a"), (5, 4, 5, 5, 4), (5, 4, 5, 5, 3)))  # 23 and 22
    candidate = candidate_ranking().get(external_id="a")
    assert candidate.quality == pytest.approx(22.5)


def test_ranking_orders_by_q_then_id_and_marks_top_and_bottom(db, client, curator):
    # Hand computation: sums 25, 20, 20, 15, 10 and one unjudged candidate.
    lines = [
        with_judges(CandidateLineFactory(id="e-low"), (2, 2, 2, 2, 2)),  # Q 10
        with_judges(CandidateLineFactory(id="b-tie"), (4, 4, 4, 4, 4)),  # Q 20
        with_judges(CandidateLineFactory(id="a-tie"), (5, 5, 5, 5, 5), (3, 3, 3, 3, 3)),  # Q 20
        with_judges(CandidateLineFactory(id="z-best"), (5, 5, 5, 5, 5)),  # Q 25
        with_judges(CandidateLineFactory(id="c-mid"), (3, 3, 3, 3, 3)),  # Q 15
        with_judges(CandidateLineFactory(id="u-none")),  # no Q
    ]
    import_lines(*lines)
    ranked = list(candidate_ranking().values_list("external_id", "rank", "quality"))
    assert ranked == [
        ("z-best", 1, 25.0),
        ("a-tie", 2, 20.0),
        ("b-tie", 3, 20.0),
        ("c-mid", 4, 15.0),
        ("e-low", 5, 10.0),
        ("u-none", None, None),
    ]
    bounds = ranking_bounds(k=2)
    assert [c.external_id for c in candidate_ranking(group="top", bounds=bounds)] == ["z-best", "a-tie"]
    assert [c.external_id for c in candidate_ranking(group="bottom", bounds=bounds)] == ["c-mid", "e-low"]

    client.force_login(curator)
    page = client.get("/candidates/?k=2").content.decode()
    assert page.index("z-best") < page.index("a-tie") < page.index("b-tie") < page.index("c-mid") < page.index("e-low")
    assert page.count('class="row-top"') == 2 and page.count('class="row-bottom"') == 2


def test_a_new_import_reranks_everything(db):
    import_lines(with_judges(CandidateLineFactory(id="first"), (3, 3, 3, 3, 3)))
    import_lines(with_judges(CandidateLineFactory(id="second"), (4, 4, 4, 4, 4)))
    assert list(candidate_ranking().values_list("external_id", "rank")) == [("second", 1), ("first", 2)]


def test_filters_and_search(db):
    import_lines(
        with_judges(CandidateLineFactory(id="x1", perturbation="delegation_of_control"), (4, 4, 4, 4, 4)),
        with_judges(CandidateLineFactory(id="x2", risk_category="persistence"), (3, 3, 3, 3, 3)),
    )
    assert [c.external_id for c in candidate_ranking(perturbation="delegation_of_control")] == ["x1"]
    assert [c.external_id for c in candidate_ranking(risk_category="persistence")] == ["x2"]
    assert [c.external_id for c in candidate_ranking(search="X2")] == ["x2"]


def test_pages_of_the_ranking_follow_rank_order_into_the_unranked(db):
    from django.core.paginator import Paginator

    from candidates.ranking.selectors import candidate_ranking_pageable

    lines = [with_judges(CandidateLineFactory(id=f"r{i:02d}"), (1 + i % 5,) * 5) for i in range(7)]
    lines += [with_judges(CandidateLineFactory(id=f"u{i}")) for i in range(2)]
    import_lines(*lines)
    expected = list(candidate_ranking().values_list("external_id", flat=True))
    bounds = ranking_bounds(k=3)
    paginator = Paginator(candidate_ranking_pageable(bounds=bounds), 4)
    walked = [c.external_id for n in paginator.page_range for c in paginator.page(n).object_list]
    assert paginator.count == 9 and walked == expected and walked[-2:] == ["u0", "u1"]
    bottom = Paginator(candidate_ranking_pageable(group="bottom", bounds=bounds), 2)
    assert [c.external_id for n in bottom.page_range for c in bottom.page(n).object_list] == expected[4:7]


def test_filtered_and_searched_pages_follow_rank_order_on_the_page_and_the_api(db, curator_client):
    from django.core.paginator import Paginator

    from candidates.ranking.selectors import candidate_ranking_pageable

    perturbations = ("underspecification", "delegation_of_control")
    lines = [
        with_judges(CandidateLineFactory(id=f"f{i:02d}", perturbation=perturbations[i % 2]), (1 + i % 5,) * 5)
        for i in range(11)
    ]
    lines += [with_judges(CandidateLineFactory(id=f"fu{i}", perturbation="delegation_of_control")) for i in range(2)]
    import_lines(*lines)
    bounds = ranking_bounds()
    for query in ({"perturbation": "delegation_of_control"}, {"search": "f0"}, {"group": "unranked"}):
        expected = list(candidate_ranking(**query).values_list("external_id", flat=True))
        paginator = Paginator(candidate_ranking_pageable(bounds=bounds, **query), 3)
        walked = [c.external_id for n in paginator.page_range for c in paginator.page(n).object_list]
        assert paginator.count == len(expected) and walked == expected, query
    expected = list(candidate_ranking(perturbation="delegation_of_control").values_list("external_id", flat=True))
    assert len(expected) == 7 and expected[-2:] == ["fu0", "fu1"]
    data = curator_client.get("/api/candidates/", {"perturbation": "delegation_of_control", "page": 1}).json()
    assert data["count"] == 7 and [row["id"] for row in data["results"]] == expected


def _sums_cell(page: str, external_id: str) -> str:
    row = page.split(f">{external_id}</a>")[0].rsplit("<tr", 1)[1]
    return row.split('<td class="sums">')[1].split("</td>")[0]


def test_the_judge_sums_say_which_judge_gave_each(db, client, curator):
    # One panel on the page: its judges named once, in the header, in the sums' order.
    import_lines(
        with_judges(CandidateLineFactory(id="one"), (5, 5, 5, 5, 3), (4, 4, 4, 4, 4)),
        with_judges(CandidateLineFactory(id="two"), (3, 3, 3, 3, 3), (2, 2, 2, 2, 2)),
    )
    client.force_login(curator)
    page = client.get("/candidates/").content.decode()
    header = page.split('data-testid="judge-sums-header">')[1].split("</th>")[0]
    assert header.index(">judge-1<") < header.index(">judge-2<")
    assert ">23<" in _sums_cell(page, "one") and 'class="judge-name"' not in _sums_cell(page, "one")
    # Another panel on the same page: each sum carries its judge's name instead.
    import_lines(with_judges(CandidateLineFactory(id="three"), (1, 1, 1, 1, 1)))
    page = client.get("/candidates/").content.decode()
    assert "<div" not in page.split('data-testid="judge-sums-header">')[1].split("</th>")[0]
    assert ">judge-1</span> <span" in _sums_cell(page, "three") and ">5<" in _sums_cell(page, "three")
    assert _sums_cell(page, "one").count('class="judge-name"') == 2
