"""Flagged candidates (their tests failed the reference check) wherever a curator decides, and the
warning an approval of one must acknowledge: on the pages, in the API, kept on the decision."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from candidates.curation.review import FlagsNotAcknowledged, decision_record
from candidates.models import Candidate, Decision
from evaluation.models import ReferenceCheck, ReferenceVerdict, Trial
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from evaluation.trials.leases import trial_claim, trial_record
from tests.evaluation.test_trial_lifecycle import outcome

pytestmark = pytest.mark.django_db

FLAGGED = "bb-319395/kimi-k2.5/gpt-5.5"  # rank 2: its V_harm will pass on the untouched environment
FINE = "bb-187101/gpt-5.4-mini/claude-opus-4-7"  # rank 1: its references give what they should
REASON = "V_harm passes on the untouched environment"
WARNING = f"Flagged: {REASON}."


def record_references(external_id: str, noop: tuple[int, int]) -> None:
    """The three reference trials of a candidate, recorded through the services as a worker would."""
    agents = reference_agents_ensure()
    run = run_launch(selection={"kind": "ids", "ids": [external_id]}, agent_ids=[a.pk for a in agents], backend="local")
    results = {"reference-safe": (1, 0), "reference-harmful": (1, 1), "reference-noop": noop}
    for trial in Trial.objects.filter(run=run).select_related("agent"):
        assert trial_record(trial_claim(trial.pk, "w"), outcome(*results[trial.agent.name]))


@pytest.fixture
def checked(examples_imported):
    record_references(FLAGGED, noop=(0, 1))
    record_references(FINE, noop=(0, 0))
    flagged, fine = (Candidate.objects.get(external_id=i) for i in (FLAGGED, FINE))
    assert ReferenceCheck.objects.get(candidate=flagged).verdict == ReferenceVerdict.FLAGGED
    assert ReferenceCheck.objects.get(candidate=fine).verdict == ReferenceVerdict.DISCRIMINATES
    return flagged, fine


def row_of(html: str, external_id: str) -> str:
    body = html.split("<tbody>")[1]
    return next(r for r in body.split("<tr") if external_id in r)


def test_flags_show_in_the_ranking_queue_and_candidate_pages(checked, curator_client):
    ranking = curator_client.get("/candidates/").content.decode()
    assert REASON in row_of(ranking, FLAGGED) and 'data-testid="flag"' not in row_of(ranking, FINE)
    queue = curator_client.get("/candidates/review/").content.decode()
    assert REASON in row_of(queue, FLAGGED) and 'data-testid="flag"' not in row_of(queue, FINE)
    assert "1 flagged by the reference check" in queue
    page = curator_client.get(f"/candidates/c/{FLAGGED}/").content.decode()
    box = page.split('data-testid="flags"')[1].split("</div>")[0]
    assert REASON in box and "Approving this candidate asks you to confirm" in box
    assert 'data-testid="flags"' not in curator_client.get(f"/candidates/c/{FINE}/").content.decode()
    review = curator_client.get("/candidates/review/2/").content.decode()
    assert 'data-flagged="1"' in review and 'data-testid="flag-warning"' in review and REASON in review
    assert f'name="warning_seen" value="{WARNING}"' in review
    assert 'data-flagged="0"' in curator_client.get("/candidates/review/1/").content.decode()


def test_flags_in_the_api(checked, curator_client):
    rows = {r["id"]: r["flags"] for r in curator_client.get("/api/candidates/").json()["results"]}
    assert rows == {FLAGGED: [REASON], FINE: []}
    assert curator_client.get(f"/api/candidates/{FLAGGED}/").json()["flags"] == [REASON]
    queue = curator_client.get("/api/review/queue/").json()
    assert queue["flagged"] == 1
    assert {e["id"]: e["flags"] for e in queue["entries"]} == {FLAGGED: [REASON], FINE: []}


def test_the_api_refuses_an_unacknowledged_approval_and_keeps_the_acknowledged_warning(checked, curator_client):
    body = {"candidate": FLAGGED, "verdict": "approve", "reason": "valid"}
    refused = curator_client.post("/api/decisions/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["flags"] == [REASON]
    [error] = refused.json()["errors"]
    # The field names the flag to send; the message says, in words, what to do.
    assert error["field"] == "acknowledge_flags" and REASON in error["message"]
    assert "tick the box that says you have read the warning" in error["message"]
    assert not Decision.objects.exists()
    assert curator_client.post("/api/decisions/", body | {"acknowledge_flags": False}, format="json").status_code == 400
    assert not Decision.objects.exists()

    accepted = curator_client.post("/api/decisions/", body | {"acknowledge_flags": True}, format="json")
    assert accepted.status_code == 201 and accepted.json()["flag_warning"] == WARNING
    assert Decision.objects.get().flag_warning == WARNING
    history = curator_client.get("/api/decisions/", {"candidate": FLAGGED}).json()
    assert [(d["verdict"], d["flag_warning"]) for d in history] == [("approve", WARNING)]
    # Rejecting needs no confirmation, and an unflagged candidate is approved without a warning.
    reject = {"candidate": FLAGGED, "verdict": "reject", "reason": "harm_test_wrong"}
    assert curator_client.post("/api/decisions/", reject, format="json").json()["flag_warning"] == ""
    fine = curator_client.post(
        "/api/decisions/", {"candidate": FINE, "verdict": "approve", "reason": "valid"}, format="json"
    )
    assert fine.status_code == 201 and fine.json()["flag_warning"] == ""


def test_the_page_without_javascript_asks_for_the_acknowledgement(checked, curator_client):
    form = {"candidate": FLAGGED, "revision": 1, "verdict": "approve", "reason": "valid", "warning_seen": WARNING}
    refused = curator_client.post("/candidates/review/2/", form)
    assert refused.status_code == 400
    html = refused.content.decode()
    assert 'data-testid="acknowledge-error"' in html and REASON in html.split('data-testid="acknowledge-error"')[1]
    assert not Decision.objects.exists()
    # Flags read on an earlier page are not the ones acknowledged now.
    stale = curator_client.post("/candidates/review/2/", form | {"acknowledge_flags": "on", "warning_seen": ""})
    assert stale.status_code == 400 and "changed since you opened it" in stale.content.decode()
    assert not Decision.objects.exists()
    accepted = curator_client.post("/candidates/review/2/", form | {"acknowledge_flags": "on"})
    assert accepted.status_code == 302
    assert Decision.objects.get().flag_warning == WARNING
    page = curator_client.get(f"/candidates/c/{FLAGGED}/").content.decode()
    assert f"Approved despite the warning shown: {WARNING}" in page


def test_the_release_draft_lists_approvals_despite_a_warning(checked, curator, curator_client):
    flagged, fine = checked
    decision_record(candidate_id=flagged.pk, user=curator, verdict="approve", reason="valid", acknowledge_flags=True)
    decision_record(candidate_id=fine.pk, user=curator, verdict="approve", reason="valid")
    response = curator_client.post("/candidates/releases/", {"name": "veriharm-bench", "version": "1.0"})
    page = curator_client.get(response.url).content.decode()
    section = page.split('data-testid="approved-with-warning"')[1].split("</section>")[0]
    assert FLAGGED in section and WARNING in section and FINE not in section


def test_the_service_and_the_database_keep_warnings_to_approvals(checked, curator):
    flagged, _ = checked
    with pytest.raises(FlagsNotAcknowledged) as refused:
        decision_record(candidate_id=flagged.pk, user=curator, verdict="approve", reason="valid")
    assert refused.value.field == "acknowledge_flags" and refused.value.flags == [REASON]
    assert not Decision.objects.exists()
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.create(
            candidate=flagged,
            decided_by=curator,
            candidate_revision=1,
            verdict="reject",
            reason="harm_test_wrong",
            flag_warning=WARNING,
        )
    # A flagged check names what is wrong; one without a reason cannot be stored.
    with pytest.raises(IntegrityError), transaction.atomic():
        ReferenceCheck.objects.filter(candidate=flagged).update(harm_passes_untouched=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReferenceCheck.objects.filter(candidate=flagged).update(verdict=ReferenceVerdict.DISCRIMINATES)
