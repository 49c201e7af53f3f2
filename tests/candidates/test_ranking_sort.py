"""The ranking sorts by each of its columns, on the page (header links) and in the API alike, with a
stable secondary order; a sort it does not know is refused, naming the parameter."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client

from candidates.models import Candidate
from candidates.pool.selectors import candidate_ranking
from candidates.ranking.queries import RANKING_SORTS
from tests.annotation.conftest import import_pool
from tests.factories import CandidateLineFactory, jsonl, with_judges
from tests.importing import candidate_import_streams

pytestmark = pytest.mark.django_db

COLUMNS = ("perturbation", "risk_category", "target_agent", "proposer")


@pytest.fixture
def ranked_and_unranked(db) -> list[dict[str, Any]]:
    """55 ranked candidates (two pages of 50) and two without judges, so without rank or Q."""
    import_pool(55)
    unjudged = [
        with_judges(CandidateLineFactory(id=f"unjudged-{name}", task_index=40 + i)) for i, name in enumerate("ab")
    ]
    candidate_import_streams([("unjudged.jsonl", jsonl(*unjudged).splitlines())])
    rows = list(Candidate.objects.values("external_id", "rank", "quality", *COLUMNS))
    assert sum(row["rank"] is None for row in rows) == 2
    return rows


def expected_orders(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each sort's order, computed here from the rows' values: rank with the unranked last, Q from
    the highest, each column with rank then id under it; a descending order is its ascending
    order reversed (so the unranked come first in it)."""

    def ids(key) -> list[str]:
        return [row["external_id"] for row in sorted(rows, key=key)]

    def by_rank(row):
        return (row["rank"] is None, row["rank"] or 0, row["external_id"])

    def by_q_highest(row):
        return (row["quality"] is None, -(row["quality"] or 0), row["external_id"])

    ascending = {
        "rank": ids(by_rank),
        "quality": ids(by_q_highest)[::-1],
        "id": ids(lambda row: row["external_id"]),
        **{column: ids(lambda row, c=column: (row[c], *by_rank(row))) for column in COLUMNS},
    }
    return {**ascending, **{f"-{name}": order[::-1] for name, order in ascending.items()}}


def api_order(client, sort: str, **params: str) -> list[str]:
    found: list[str] = []
    for page in (1, 2):
        response = client.get("/api/candidates/", {"sort": sort, "page": page, **params})
        assert response.status_code == 200, response.content[:300]
        found += [row["id"] for row in response.json()["results"]]
    return found


def page_order(client: Client, sort: str, **params: str) -> list[str]:
    found: list[str] = []
    for page in (1, 2):
        response = client.get("/candidates/", {"sort": sort, "page": page, **params})
        assert response.status_code == 200
        found += re.findall(r'<a href="/candidates/c/([^"]+)/">', response.content.decode())
    return found


def test_every_sort_is_a_complete_order_the_same_on_the_page_and_in_the_api(
    ranked_and_unranked, curator_client, client, curator
):
    client.force_login(curator)
    expected = expected_orders(ranked_and_unranked)
    assert set(expected) == set(RANKING_SORTS)
    for sort, order in expected.items():
        assert len(order) == 57
        assert api_order(curator_client, sort) == order, sort
        assert page_order(client, sort) == order, sort
    # The default is the rank order.
    assert api_order(curator_client, "") == expected["rank"]


def test_a_sort_keeps_to_the_filter(ranked_and_unranked, curator_client):
    expected = [
        external_id
        for external_id in expected_orders(ranked_and_unranked)["-id"]
        if any(
            r["external_id"] == external_id and r["risk_category"] == "credential_exposure" for r in ranked_and_unranked
        )
    ]
    response = curator_client.get("/api/candidates/", {"sort": "-id", "risk_category": "credential_exposure"})
    assert [row["id"] for row in response.json()["results"]] == expected
    assert len(expected) == 18


def test_the_headers_link_to_their_sort_and_a_second_click_reverses_it(ranked_and_unranked, client, curator):
    client.force_login(curator)
    html = client.get("/candidates/", {"risk_category": "credential_exposure"}).content.decode()
    links = dict(re.findall(r'<a href="\?([^"]*)" data-sort="([a-z_]+)"', html)[i][::-1] for i in range(7))
    assert links["quality"] == "risk_category=credential_exposure&amp;sort=-quality"  # Q: highest first
    assert links["id"] == "risk_category=credential_exposure&amp;sort=id"
    assert links["rank"] == "risk_category=credential_exposure&amp;sort=-rank"  # sorted by rank now
    assert 'aria-sort="ascending"><a href="?risk_category=credential_exposure&amp;sort=-rank" data-sort="rank"' in html
    sorted_html = client.get("/candidates/", {"sort": "proposer"}).content.decode()
    assert 'aria-sort="ascending"><a href="?sort=-proposer" data-sort="proposer"' in sorted_html
    reversed_html = client.get("/candidates/", {"sort": "-proposer"}).content.decode()
    assert 'aria-sort="descending"><a href="?sort=proposer" data-sort="proposer"' in reversed_html


@pytest.mark.parametrize("value", ["sums", "quality ", "-", "rank,id", "Rank"])
def test_a_sort_the_ranking_does_not_know_is_refused_naming_it(
    ranked_and_unranked, curator_client, client, curator, value
):
    api = curator_client.get("/api/candidates/", {"sort": value})
    assert api.status_code == 400
    assert [error["field"] for error in api.json()["errors"]] == ["sort"]
    client.force_login(curator)
    page = client.get("/candidates/", {"sort": value})
    assert page.status_code == 400
    assert "sort" in page.content.decode()


@pytest.mark.parametrize("sort", sorted(RANKING_SORTS))
def test_every_sort_reads_its_page_of_keys_from_an_index_without_sorting(ranked_and_unranked, sort):
    """With sorting by the database turned off, the plan of a deep page's keys still has no Sort
    node: an index gives the order, so 100,000 candidates are not sorted to show fifty."""
    keys = candidate_ranking(sort=sort).values_list("external_id", flat=True)[50:100]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = keys.explain()
    assert "Index" in plan and "Sort" not in plan, plan
