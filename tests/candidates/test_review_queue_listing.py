"""The review queue sorted, filtered and searched: the page and its API read the same parameters,
and the review page's next and previous follow them."""

from __future__ import annotations

import re

import pytest

from candidates.models import Candidate
from tests.candidates.curation_support import decide, import_lines
from tests.candidates.test_flag_warnings import FINE, FLAGGED, checked  # noqa: F401
from tests.factories import CandidateLineFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(db):
    """Ranks 1-4: pool-a (underspecification, destructive), pool-b (delegation, exfiltration),
    pool-c (underspecification, exfiltration), pool-d (delegation, destructive)."""
    lines = [
        CandidateLineFactory(id="pool-a", scores=(5,) * 5, task_index=0),
        CandidateLineFactory(
            id="pool-b", scores=(4,) * 5, task_index=1, perturbation="delegation_of_control", risk_category="exfil"
        ),
        CandidateLineFactory(id="pool-c", scores=(3,) * 5, task_index=2, risk_category="exfil"),
        CandidateLineFactory(id="pool-d", scores=(2,) * 5, task_index=3, perturbation="delegation_of_control"),
    ]
    import_lines(*lines)


def listed(html: str) -> list[str]:
    """The candidate ids of the queue's rows, in order."""
    table = html.split('data-testid="queue-rows"')[1].split("</table>")[0]
    return re.findall(r'<tr data-candidate="([^"]+)"', table)


def api_ids(client, **params) -> list[str]:
    response = client.get("/api/review/queue/", params)
    assert response.status_code == 200, response.content
    return [entry["id"] for entry in response.json()["entries"]]


@pytest.mark.parametrize(
    "params, expected",
    [
        ({}, ["pool-a", "pool-b", "pool-c", "pool-d"]),
        ({"sort": "-rank"}, ["pool-d", "pool-c", "pool-b", "pool-a"]),
        ({"sort": "quality"}, ["pool-d", "pool-c", "pool-b", "pool-a"]),
        ({"sort": "-id"}, ["pool-d", "pool-c", "pool-b", "pool-a"]),
        ({"decision": "undecided"}, ["pool-a", "pool-d"]),
        ({"decision": "approved"}, ["pool-c"]),
        ({"decision": "rejected"}, ["pool-b"]),
        ({"sort": "-decided"}, ["pool-c", "pool-b", "pool-a", "pool-d"]),
        ({"sort": "decided"}, ["pool-b", "pool-c", "pool-a", "pool-d"]),
        ({"perturbation": "delegation_of_control"}, ["pool-b", "pool-d"]),
        ({"risk_category": "exfil", "sort": "-rank"}, ["pool-c", "pool-b"]),
        ({"q": "POOL-C"}, ["pool-c"]),
        ({"k": "2"}, ["pool-a", "pool-b"]),
    ],
)
def test_sort_filter_and_search_change_what_is_listed(pool, curator, curator_client, params, expected):
    decide("pool-b", curator, "reject", "unrealistic")
    decide("pool-c", curator, "approve")
    assert listed(curator_client.get("/candidates/review/", params).content.decode()) == expected
    assert api_ids(curator_client, **params) == expected


def test_the_search_reaches_source_tasks(pool, curator_client):
    task = Candidate.objects.select_related("source_task").get(external_id="pool-d").source_task.external_id
    assert api_ids(curator_client, q=task) == ["pool-d"]


def test_flagged_only(checked, curator_client):  # noqa: F811
    assert api_ids(curator_client) == [FINE, FLAGGED]
    assert api_ids(curator_client, flagged="1") == [FLAGGED]
    assert listed(curator_client.get("/candidates/review/?flagged=1").content.decode()) == [FLAGGED]


def test_the_api_counts_the_whole_queue_and_what_is_shown(pool, curator, curator_client):
    decide("pool-a", curator)
    queue = curator_client.get("/api/review/queue/", {"decision": "undecided"}).json()
    assert (queue["total"], queue["shown"], queue["decided"], queue["approved"]) == (4, 3, 1, 1)
    first = queue["entries"][0]
    assert first["id"] == "pool-b" and first["verdict"] == "" and first["decided_at"] is None
    assert first["perturbation"] == "delegation_of_control" and first["quality"] == pytest.approx(20.0)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"sort": "q"}, "sort"),
        ({"decision": "maybe"}, "decision"),
        ({"flagged": "perhaps"}, "flagged"),
        ({"q": "x" * 201}, "q"),
        ({"k": "0"}, "k"),
    ],
)
def test_bad_parameters_are_refused_by_name_on_the_page_and_the_api(pool, curator_client, params, field):
    page = curator_client.get("/candidates/review/", params)
    assert page.status_code == 400 and f"<b>{field}</b>" in page.content.decode()
    api = curator_client.get("/api/review/queue/", params)
    assert api.status_code == 400 and [e["field"] for e in api.json()["errors"]] == [field]
    review = curator_client.get("/candidates/review/1/", params)
    assert review.status_code == 400 and f"<b>{field}</b>" in review.content.decode()


def test_pagination_links_and_row_links_keep_the_order_and_filters(pool, curator_client):
    html = curator_client.get("/candidates/review/", {"sort": "-rank", "decision": "undecided"}).content.decode()
    assert 'href="/candidates/review/4/?sort=-rank&amp;decision=undecided"' in html


def test_next_after_a_decision_follows_the_chosen_order_and_filters(pool, curator, curator_client):
    decide("pool-c", curator)
    query = "sort=-rank&decision=undecided"
    page = curator_client.get(f"/candidates/review/4/?{query}").content.decode()
    assert f'data-next-url="/candidates/review/2/?{query.replace("&", "&amp;")}"' in page  # rank 3 is decided
    form = {"candidate": "pool-d", "revision": 1, "verdict": "reject", "reason": "unrealistic"}
    response = curator_client.post(f"/candidates/review/4/?{query}", form)
    assert response.status_code == 302 and response.url == f"/candidates/review/2/?{query}"
    form = {"candidate": "pool-a", "revision": 1, "verdict": "approve", "reason": "valid"}
    last = curator_client.post(f"/candidates/review/1/?{query}", form)
    assert last.url == f"/candidates/review/?{query}"  # the end of the listing: back to the queue


def test_the_review_page_without_parameters_walks_the_ranking_as_before(pool, curator_client):
    page = curator_client.get("/candidates/review/2/").content.decode()
    assert 'data-next-url="/candidates/review/3/"' in page and 'data-previous-url="/candidates/review/1/"' in page
