"""Deciding many candidates at once from the review queue: one service, all or nothing, behind a
confirm step on the page and an API twin."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from candidates.curation.review import (
    MAX_BULK_DECISIONS,
    DecisionRefused,
    FlaggedInBatch,
    decisions_record_bulk,
)
from candidates.models import Decision
from tests.candidates.curation_support import decide, import_lines
from tests.candidates.test_flag_warnings import FINE, FLAGGED, WARNING, checked  # noqa: F401
from tests.conftest import make_user
from tests.factories import CandidateLineFactory
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db

POOL = ["pool-a", "pool-b", "pool-c", "pool-d"]


@pytest.fixture
def pool(db):
    """Four ranked candidates, best first: pool-a .. pool-d."""
    import_lines(*(CandidateLineFactory(id=ext, scores=(5 - i,) * 5) for i, ext in enumerate(POOL)))
    return POOL


@pytest.fixture
def viewer_client(db) -> APIClient:
    client = APIClient()
    client.force_login(make_user("view", VIEWER))
    return client


def _decisions() -> list[tuple[str, str, str]]:
    return sorted(Decision.objects.values_list("candidate__external_id", "verdict", "reason"))


def test_a_batch_records_one_decision_per_candidate_on_its_current_revision(pool, curator):
    decisions = decisions_record_bulk(
        external_ids=["pool-b", "pool-a", "pool-b"], user=curator, verdict="reject", reason="unrealistic", note=" dup "
    )
    assert len(decisions) == 2  # ticked twice, decided once
    assert _decisions() == [("pool-a", "reject", "unrealistic"), ("pool-b", "reject", "unrealistic")]
    assert {(d.note, d.candidate_revision, d.decided_by.username) for d in Decision.objects.all()} == {
        ("dup", 1, "cur")
    }


@pytest.mark.parametrize(
    "ids, verdict, reason, note, field",
    [
        (["pool-a", "nope", "gone"], "reject", "unrealistic", "", "candidates"),
        ([], "reject", "unrealistic", "", "candidates"),
        (["pool-a", "pool-b"], "reject", "valid", "", "reason"),
        (["pool-a", "pool-b"], "approve", "harm_requested", "", "reason"),
        (["pool-a", "pool-b"], "reject", "other", "   ", "note"),
        (["pool-a"], "maybe", "valid", "", "verdict"),
    ],
)
def test_a_refused_batch_records_nothing(pool, curator, ids, verdict, reason, note, field):
    decide("pool-c", curator, "approve")
    with pytest.raises(DecisionRefused) as refused:
        decisions_record_bulk(external_ids=ids, user=curator, verdict=verdict, reason=reason, note=note)
    assert refused.value.field == field
    assert _decisions() == [("pool-c", "approve", "valid")]


def test_unknown_ids_are_named(pool, curator):
    with pytest.raises(DecisionRefused) as refused:
        decisions_record_bulk(external_ids=["pool-a", "nope"], user=curator, verdict="reject", reason="unrealistic")
    assert (
        refused.value.status_code == 404 and "nope" in refused.value.message and "pool-a" not in refused.value.message
    )


def test_a_batch_over_the_cap_is_refused_whole(pool, curator):
    ids = POOL + [f"missing-{i}" for i in range(MAX_BULK_DECISIONS)]
    with pytest.raises(DecisionRefused) as refused:
        decisions_record_bulk(external_ids=ids, user=curator, verdict="reject", reason="unrealistic")
    assert refused.value.field == "candidates" and f"at most {MAX_BULK_DECISIONS}" in refused.value.message
    assert not Decision.objects.exists()


def test_approving_a_batch_with_a_flagged_candidate_needs_the_acknowledgement(checked, curator):  # noqa: F811
    with pytest.raises(FlaggedInBatch) as refused:
        decisions_record_bulk(external_ids=[FINE, FLAGGED], user=curator, verdict="approve", reason="valid")
    assert refused.value.field == "acknowledge_flags" and FLAGGED in refused.value.message
    assert list(refused.value.flagged) == [FLAGGED]
    assert not Decision.objects.exists()

    # Rejecting flagged candidates needs no confirmation; approving them with it keeps the warning.
    decisions_record_bulk(external_ids=[FLAGGED], user=curator, verdict="reject", reason="harm_test_wrong")
    decisions_record_bulk(
        external_ids=[FINE, FLAGGED], user=curator, verdict="approve", reason="valid", acknowledge_flags=True
    )
    latest = {d.candidate.external_id: d.flag_warning for d in Decision.objects.filter(verdict="approve")}
    assert latest == {FINE: "", FLAGGED: WARNING}


# --- the API ---------------------------------------------------------------------------------------

BULK_API = "/api/review/decisions/bulk/"


def test_the_bulk_api_records_and_answers_the_decisions(pool, curator_client):
    body = {"candidates": ["pool-a", "pool-c"], "verdict": "reject", "reason": "other", "note": "same source"}
    response = curator_client.post(BULK_API, body, format="json")
    assert response.status_code == 201
    answer = response.json()
    assert answer["recorded"] == 2
    assert [(d["candidate"], d["verdict"], d["note"], d["decided_by"]) for d in answer["decisions"]] == [
        ("pool-a", "reject", "same source", "cur"),
        ("pool-c", "reject", "same source", "cur"),
    ]


@pytest.mark.parametrize(
    "change, status, field",
    [
        ({"candidates": []}, 400, "candidates"),
        ({"candidates": ["pool-a"] * (MAX_BULK_DECISIONS + 1)}, 400, "candidates"),
        ({"candidates": ["pool-a", "nope"]}, 404, "candidates"),
        ({"reason": "valid"}, 400, "reason"),
        ({"reason": "other", "note": ""}, 400, "note"),
        ({"verdict": "maybe"}, 400, "verdict"),
    ],
)
def test_the_bulk_api_refuses_naming_the_field_and_records_nothing(pool, curator_client, change, status, field):
    body = {"candidates": ["pool-a", "pool-b"], "verdict": "reject", "reason": "unrealistic"} | change
    response = curator_client.post(BULK_API, body, format="json")
    assert response.status_code == status
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert not Decision.objects.exists()


def test_the_bulk_api_names_the_flagged_candidates(checked, curator_client):  # noqa: F811
    body = {"candidates": [FINE, FLAGGED], "verdict": "approve", "reason": "valid"}
    response = curator_client.post(BULK_API, body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "acknowledge_flags"
    assert list(response.json()["flagged"]) == [FLAGGED]
    assert not Decision.objects.exists()
    assert curator_client.post(BULK_API, body | {"acknowledge_flags": True}, format="json").status_code == 201


def test_annotators_and_viewers_cannot_decide_in_bulk(pool, annotator_client, viewer_client):
    body = {"candidates": ["pool-a"], "verdict": "reject", "reason": "unrealistic"}
    assert annotator_client.post(BULK_API, body, format="json").status_code == 403
    assert viewer_client.post(BULK_API, body, format="json").status_code == 403
    assert not Decision.objects.exists()


# --- the page: tick, confirm, apply ------------------------------------------------------------------


def test_the_queue_confirms_a_batch_before_applying_it(pool, curator_client):
    url = "/candidates/review/?sort=-rank"
    form = {"candidates": ["pool-b", "pool-d"], "verdict": "reject", "reason": "unrealistic", "note": ""}
    step = curator_client.post(url, form)
    assert step.status_code == 200 and not Decision.objects.exists()
    html = step.content.decode()
    assert "Reject 2 candidates as “Not a realistic benign request" in html
    assert 'name="confirmed" value="1"' in html and 'value="pool-b"' in html and 'value="pool-d"' in html
    assert 'href="/candidates/review/?sort=-rank"' in html  # going back keeps the order

    done = curator_client.post(url, form | {"confirmed": "1"})
    assert done.status_code == 302 and done.url == "/candidates/review/?sort=-rank"
    assert _decisions() == [("pool-b", "reject", "unrealistic"), ("pool-d", "reject", "unrealistic")]
    after = curator_client.get(done.url).content.decode()
    assert "Rejected 2 candidates" in after and "2 of 4 decided" in after


@pytest.mark.parametrize(
    "form, said",
    [
        ({"verdict": "reject", "reason": "unrealistic"}, "choose at least one candidate"),
        ({"candidates": ["pool-a"], "verdict": "reject", "reason": "valid"}, "is not a reason to reject"),
        ({"candidates": ["pool-a"], "verdict": "reject", "reason": "other", "note": ""}, "say why in the note"),
        (
            {"candidates": ["pool-a", "nope"], "verdict": "reject", "reason": "unrealistic"},
            "no candidate has the id nope",
        ),
        ({"candidates": ["x" * 300], "verdict": "reject", "reason": "unrealistic"}, "at most 200 characters"),
    ],
)
def test_a_refused_batch_on_the_page_says_why_and_records_nothing(pool, curator_client, form, said):
    for confirmed in ("", "1"):
        response = curator_client.post("/candidates/review/", form | {"confirmed": confirmed})
        assert 400 <= response.status_code < 500
        errors = response.content.decode().split('data-testid="bulk-errors"')[1].split("</div>")[0]
        # Said in words, without the form's field names.
        assert said in errors and "<b>" not in errors
    assert not Decision.objects.exists()


def test_a_batch_with_flagged_candidates_is_refused_on_the_page_until_acknowledged(checked, curator_client):  # noqa: F811
    form = {"candidates": [FINE, FLAGGED], "verdict": "approve", "reason": "valid", "confirmed": "1"}
    refused = curator_client.post("/candidates/review/", form)
    assert refused.status_code == 400 and FLAGGED in refused.content.decode()
    assert not Decision.objects.exists()
    step = curator_client.post("/candidates/review/", form | {"confirmed": "", "acknowledge_flags": "on"})
    assert "1 of them is flagged" in step.content.decode()
    curator_client.post("/candidates/review/", form | {"acknowledge_flags": "on"})
    assert Decision.objects.filter(verdict="approve").count() == 2


def test_viewers_get_no_bulk_and_cannot_post_it(pool, viewer_client):
    form = {"candidates": ["pool-a"], "verdict": "reject", "reason": "unrealistic", "confirmed": "1"}
    assert viewer_client.post("/candidates/review/", form).status_code == 403
    assert not Decision.objects.exists()


# --- a candidate edited between choosing and confirming ------------------------------------------


def _revise(external_id: str, user) -> None:
    from candidates.curation.revisions import candidate_revise
    from candidates.models import Candidate

    candidate = Candidate.objects.get(external_id=external_id)
    candidate_revise(
        candidate_id=candidate.pk,
        user=user,
        instruction=candidate.instruction + " Please.",
        harm_test=candidate.harm_test,
        reason="tone",
        base_revision=candidate.revision,
    )


def test_a_batch_holding_a_candidate_edited_since_it_was_chosen_is_refused_whole(pool, curator):
    _revise("pool-c", curator)
    with pytest.raises(DecisionRefused) as refused:
        decisions_record_bulk(
            external_ids=["pool-a", "pool-c"],
            user=curator,
            verdict="reject",
            reason="unrealistic",
            seen_revisions={"pool-a": 1, "pool-c": 1},
        )
    assert refused.value.status_code == 409 and "pool-c (now revision 2)" in refused.value.message
    assert "pool-a" not in refused.value.message
    assert not Decision.objects.exists()
    decisions_record_bulk(
        external_ids=["pool-a", "pool-c"],
        user=curator,
        verdict="reject",
        reason="unrealistic",
        seen_revisions={"pool-a": 1, "pool-c": 2},
    )
    assert sorted(Decision.objects.values_list("candidate__external_id", "candidate_revision")) == [
        ("pool-a", 1),
        ("pool-c", 2),
    ]


def test_the_confirm_step_pins_the_revisions_it_showed(pool, curator, curator_client):
    form = {"candidates": ["pool-a", "pool-c"], "verdict": "reject", "reason": "unrealistic", "note": ""}
    step = curator_client.post("/candidates/review/", form).content.decode()
    revisions = step.count('name="revisions" value="1"')
    assert revisions == 2
    _revise("pool-c", curator)  # someone edits it while the confirm page is open

    done = curator_client.post("/candidates/review/", form | {"confirmed": "1", "revisions": ["1", "1"]})
    assert done.status_code == 409 and "pool-c (now revision 2)" in done.content.decode()
    assert not Decision.objects.exists()
    mismatched = curator_client.post("/candidates/review/", form | {"confirmed": "1", "revisions": ["1"]})
    assert mismatched.status_code == 400 and "one revision per candidate" in mismatched.content.decode()
    assert not Decision.objects.exists()


def test_the_bulk_api_refuses_a_candidate_edited_since_the_revision_it_names(pool, curator, curator_client):
    _revise("pool-b", curator)
    body = {"candidates": ["pool-a", "pool-b"], "verdict": "reject", "reason": "unrealistic"}
    stale = curator_client.post("/api/review/decisions/bulk/", body | {"seen_revisions": {"pool-b": 1}}, format="json")
    assert stale.status_code == 409 and stale.json()["errors"][0]["field"] == "candidates"
    assert not Decision.objects.exists()
    fresh = curator_client.post("/api/review/decisions/bulk/", body | {"seen_revisions": {"pool-b": 2}}, format="json")
    assert fresh.status_code == 201 and fresh.json()["recorded"] == 2
