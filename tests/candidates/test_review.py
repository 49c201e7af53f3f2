"""The review queue: decisions with reasons, kept as history; the queue, its pages and API; roles."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from candidates.curation.review import DecisionRefused, decision_record
from candidates.curation.revisions import candidate_revise
from candidates.curation.selectors import decision_history, review_queue
from candidates.models import AppendOnly, Candidate, Decision, Release, Revision
from tests.candidates.curation_support import decide

pytestmark = pytest.mark.django_db

FIRST = "bb-187101/gpt-5.4-mini/claude-opus-4-7"  # rank 1
SECOND = "bb-319395/kimi-k2.5/gpt-5.5"  # rank 2


def test_every_decision_is_kept_and_the_latest_is_current(examples_imported, curator, admin_user):
    first = decide(FIRST, curator, "approve")
    second = decide(FIRST, admin_user, "reject", "other", note="the harm test also passes on a clean run")
    history = decision_history(Candidate.objects.get(external_id=FIRST).pk)
    assert [d.pk for d in history] == [second.pk, first.pk]
    assert [(d.verdict, d.reason, d.decided_by.username) for d in history] == [
        ("reject", "other", "adm"),
        ("approve", "valid", "cur"),
    ]
    assert history[0].note == "the harm test also passes on a clean run"
    assert history[0].decided_at >= history[1].decided_at
    queue = review_queue()
    assert [(e.rank, e.external_id, e.verdict) for e in queue.entries] == [(1, FIRST, "reject"), (2, SECOND, "")]
    assert (queue.decided, queue.approved, queue.rejected, queue.total) == (1, 0, 1, 2)


def test_decisions_are_append_only_in_the_model_layer(examples_imported, curator):
    decision = decide(FIRST, curator)
    decision.verdict = "reject"
    with pytest.raises(AppendOnly):
        decision.save()
    with pytest.raises(AppendOnly):
        decision.delete()
    with pytest.raises(AppendOnly):
        Decision.objects.filter(pk=decision.pk).update(verdict="reject")
    with pytest.raises(AppendOnly):
        Decision.objects.all().delete()
    assert Decision.objects.get(pk=decision.pk).verdict == "approve"


@pytest.mark.parametrize(
    "verdict, reason, note, field",
    [
        ("approve", "harm_requested", "", "reason"),
        ("reject", "valid", "", "reason"),
        ("reject", "other", "  ", "note"),
        ("maybe", "valid", "", "verdict"),
        ("approve", "because", "", "reason"),
    ],
)
def test_a_reason_must_fit_the_verdict(examples_imported, curator, verdict, reason, note, field):
    candidate = Candidate.objects.get(external_id=FIRST)
    with pytest.raises(DecisionRefused) as refused:
        decision_record(candidate_id=candidate.pk, user=curator, verdict=verdict, reason=reason, note=note)
    assert refused.value.field == field
    assert not Decision.objects.exists()


def test_the_database_refuses_what_the_service_refuses(examples_imported, curator):
    candidate = Candidate.objects.get(external_id=FIRST)
    for bad in ({"verdict": "approve", "reason": "harm_requested"}, {"verdict": "reject", "reason": "other"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Decision.objects.create(candidate=candidate, decided_by=curator, candidate_revision=1, **bad)


def test_a_decision_on_text_edited_since_is_refused(examples_imported, curator):
    candidate = Candidate.objects.get(external_id=FIRST)
    candidate_revise(
        candidate_id=candidate.pk,
        user=curator,
        instruction=candidate.instruction + " Please.",
        harm_test=candidate.harm_test,
        reason="tone",
        base_revision=1,
    )
    with pytest.raises(DecisionRefused) as refused:
        decision_record(candidate_id=candidate.pk, user=curator, verdict="approve", reason="valid", seen_revision=1)
    assert "now revision 2" in refused.value.message
    decision = decision_record(
        candidate_id=candidate.pk, user=curator, verdict="approve", reason="valid", seen_revision=2
    )
    assert decision.candidate_revision == 2


def test_queue_navigation(examples_imported, curator):
    queue = review_queue()
    assert queue.first_undecided() == 1 and queue.neighbour(1, 1) == 2 and queue.neighbour(2, 1) is None
    decide(SECOND, curator)
    queue = review_queue()
    assert queue.next_undecided(2) == 1 and queue.first_undecided() == 1
    assert review_queue(k=1).total == 1


def test_the_review_page_shows_everything_known(examples_imported, curator_client):
    response = curator_client.get("/candidates/review/2/")
    assert response.status_code == 200
    html = response.content.decode()
    for text in (
        SECOND,
        "0 of 2 decided",
        "Several people on this shared machine",  # the perturbed instruction, in the diff
        "test_solution_script_is_world_writable",  # the harm test
        "test_timestamp_forward_adjustment",  # the task test
        "claude-opus-4-7",  # a judge
        "Undecided",
        "<kbd>3</kbd>",
        "js/review.js",
    ):
        assert text in html, text
    assert curator_client.get("/candidates/review/99/").status_code == 404


def test_deciding_on_the_page_moves_to_the_next_rank(examples_imported, curator_client):
    second = Candidate.objects.get(external_id=SECOND)
    form = {"candidate": FIRST, "revision": 1, "verdict": "approve", "reason": "valid", "note": ""}
    response = curator_client.post("/candidates/review/1/", form)
    assert response.status_code == 302 and response.url == "/candidates/review/2/"
    form = {"candidate": SECOND, "revision": second.revision, "verdict": "reject", "reason": "harm_requested"}
    response = curator_client.post("/candidates/review/2/", form)
    assert response.status_code == 302 and response.url == "/candidates/review/"
    assert [e.verdict for e in review_queue().entries] == ["approve", "reject"]
    overview = curator_client.get("/candidates/review/").content.decode()
    assert "2 of 2 decided" in overview


def test_a_refused_decision_on_the_page_says_why_and_changes_nothing(examples_imported, curator_client):
    form = {"candidate": FIRST, "revision": 1, "verdict": "reject", "reason": "valid"}
    response = curator_client.post("/candidates/review/1/", form)
    assert response.status_code == 400
    assert "is not a reason to reject" in response.content.decode()
    # The page was opened on rank 2's candidate but rank 1 is posted: a changed ranking is refused.
    form = {"candidate": SECOND, "revision": 1, "verdict": "approve", "reason": "valid"}
    response = curator_client.post("/candidates/review/1/", form)
    assert response.status_code == 400 and "the ranking changed" in response.content.decode()
    assert not Decision.objects.exists()


def test_the_candidate_page_shows_the_current_decision_and_history(examples_imported, curator, curator_client):
    decide(FIRST, curator)
    decide(FIRST, curator, "reject", "unrealistic")
    html = curator_client.get(f"/candidates/c/{FIRST}/").content.decode()
    assert 'data-testid="current-verdict">Rejected' in html
    assert "Decision history (2)" in html and "Edit instruction or harm test" in html


def test_the_decisions_api(examples_imported, curator_client, annotator_client):
    response = curator_client.post(
        "/api/decisions/", {"candidate": FIRST, "verdict": "approve", "reason": "valid"}, format="json"
    )
    assert response.status_code == 201
    assert response.json() | {"id": 0, "decided_at": ""} == {
        "id": 0,
        "candidate": FIRST,
        "verdict": "approve",
        "reason": "valid",
        "note": "",
        "candidate_revision": 1,
        "decided_by": "cur",
        "decided_at": "",
        "flag_warning": "",
    }
    bad = curator_client.post("/api/decisions/", {"candidate": FIRST, "verdict": "approve", "reason": "harm_requested"})
    assert bad.status_code == 400 and [e["field"] for e in bad.json()["errors"]] == ["reason"]
    stale = curator_client.post(
        "/api/decisions/", {"candidate": FIRST, "verdict": "reject", "reason": "unrealistic", "revision": 7}
    )
    assert stale.status_code == 409
    assert (
        curator_client.post(
            "/api/decisions/", {"candidate": "nope", "verdict": "approve", "reason": "valid"}
        ).status_code
        == 404
    )
    history = curator_client.get("/api/decisions/", {"candidate": FIRST}).json()
    assert [d["verdict"] for d in history] == ["approve"]
    queue = curator_client.get("/api/review/queue/").json()
    assert (queue["decided"], queue["approved"], [e["verdict"] for e in queue["entries"]]) == (1, 1, ["approve", ""])
    assert annotator_client.get("/api/decisions/", {"candidate": FIRST}).status_code == 403
    refused = annotator_client.post(
        "/api/decisions/", {"candidate": FIRST, "verdict": "reject", "reason": "unrealistic"}
    )
    assert refused.status_code == 403 and Decision.objects.count() == 1


UNKNOWN_CANDIDATE = {"errors": [{"field": "candidate", "message": "No candidate with this id."}]}


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/decisions/", {"verdict": "approve", "reason": "valid"}),
        ("/api/revisions/", {"instruction": "Do it.", "harm_test": "assert True", "reason": "r", "base_revision": 1}),
    ],
)
def test_a_history_api_refuses_an_unknown_candidate_on_its_field(curator_client, path, body):
    # Listing and adding to a candidate's decisions or revisions: one 404, naming `candidate`,
    # whether the id is unknown or missing.
    for listed in (curator_client.get(path, {"candidate": "nope"}), curator_client.get(path)):
        assert (listed.status_code, listed.json()) == (404, UNKNOWN_CANDIDATE)
    added = curator_client.post(path, {"candidate": "nope", **body}, format="json")
    assert (added.status_code, added.json()) == (404, UNKNOWN_CANDIDATE)
    assert not Decision.objects.exists() and not Revision.objects.exists()


CURATION_PAGES = [
    "/candidates/review/",
    "/candidates/review/1/",
    f"/candidates/revise/{FIRST}/",
    "/candidates/releases/",
    "/candidates/reports/search/",
    "/candidates/reports/descriptive/",
    "/api/review/queue/",
    f"/api/decisions/?candidate={FIRST}",
    f"/api/revisions/?candidate={FIRST}",
    "/api/releases/",
    "/api/reports/search/",
    "/api/reports/descriptive/",
]
CURATION_POSTS = [
    ("/candidates/review/1/", {"candidate": FIRST, "revision": 1, "verdict": "approve", "reason": "valid"}),
    (f"/candidates/revise/{FIRST}/", {"base_revision": 1, "instruction": "x", "harm_test": "x = 1", "reason": "r"}),
    ("/candidates/releases/", {"name": "veriharm-bench", "version": "1.0"}),
    ("/api/decisions/", {"candidate": FIRST, "verdict": "approve", "reason": "valid"}),
    (
        "/api/revisions/",
        {"candidate": FIRST, "instruction": "x", "harm_test": "x = 1", "reason": "r", "base_revision": 1},
    ),
    ("/api/releases/", {"name": "veriharm-bench", "version": "1.0"}),
]


@pytest.mark.parametrize("url", CURATION_PAGES)
def test_annotators_are_refused_every_curation_page(examples_imported, annotator_client, client, curator_client, url):
    response = annotator_client.get(url)
    assert response.status_code == 403
    assert b"claude-opus-4-7" not in response.content
    anonymous = client.get(url)
    assert anonymous.status_code in (302, 401, 403)
    assert curator_client.get(url).status_code == 200


@pytest.mark.parametrize("url, data", CURATION_POSTS)
def test_annotators_cannot_curate(examples_imported, annotator_client, url, data):
    assert annotator_client.post(url, data).status_code == 403
    assert not Decision.objects.exists()
    assert Candidate.objects.get(external_id=FIRST).revision == 1
    assert not Revision.objects.exists() and not Release.objects.exists()
