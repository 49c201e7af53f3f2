"""Approving or freezing a candidate blind annotators judged invalid: every place a curator decides shows
each candidate's human majority with its votes, its reference check and its flags, and going against
the humans needs an acknowledgement (pages and API alike) that the decision or the release keeps."""

from __future__ import annotations

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from annotation.studies import services
from candidates.models import Decision, Release, ReleaseItem
from candidates.releases import services as releases
from candidates.releases.bundle import release_bundle
from tests.annotation.conftest import import_pool, label_all
from tests.conftest import make_user
from tests.hostile.seed import table_counts
from veriharm_site.roles import ANNOTATOR

pytestmark = pytest.mark.django_db

STUDY = "Validation pilot"
VOTES = f"0 of 3 votes valid (study “{STUDY}”)"
WARNING = f"Humans judged it invalid: {VOTES}."


@pytest.fixture
def judged(curator):
    return judged_candidates(curator)


def judged_candidates(curator):
    """A study whose three annotators judge item 1 invalid and every other item valid: (its
    candidate, item 2's candidate)."""
    import_pool(12)
    people = [make_user(f"person-{i}", ANNOTATOR) for i in range(3)]
    study = services.study_create(
        services.StudySpec(
            name=STUDY, seed=5, top_k=4, per_group=2, stratify_by="risk_category", annotators_per_item=3
        ),
        annotators=people,
        created_by=curator,
    )
    for person in people:
        label_all(study, person, lambda number: (number != 1,) * 3)
    items = list(study.items.order_by("number").select_related("candidate"))
    return items[0].candidate, items[1].candidate


APPROVE = {"verdict": "approve", "reason": "valid", "note": ""}


def test_the_review_page_lists_human_majority_reference_check_and_flags(judged, curator_client):
    rejected, accepted = judged
    page = curator_client.get(f"/candidates/review/{rejected.rank}/").content.decode()
    facts = page.split('data-testid="approval-facts"')[1].split("</dl>")[0]
    assert 'data-verdict="invalid"' in facts and f"invalid, {VOTES}" in facts
    assert 'data-state="not_checked"' in facts and "Flags" in facts
    assert 'data-testid="acknowledge-human-verdict"' in page
    other = curator_client.get(f"/candidates/review/{accepted.rank}/").content.decode()
    assert 'data-verdict="valid"' in other and "3 of 3 votes valid" in other
    assert 'data-testid="acknowledge-human-verdict"' not in other
    # The candidate page's own decision form shows the same.
    detail = curator_client.get(f"/candidates/c/{rejected.external_id}/").content.decode()
    assert f"invalid, {VOTES}" in detail.split('data-testid="decide"')[1]


def test_approving_what_humans_rejected_needs_the_acknowledgement_over_the_api(judged, curator_client):
    rejected, accepted = judged
    refused = curator_client.post("/api/decisions/", {"candidate": rejected.external_id, **APPROVE}, format="json")
    assert refused.status_code == 400
    body = refused.json()
    assert body["errors"][0]["field"] == "acknowledge_human_verdict"
    assert body["human_rejected"] == {rejected.external_id: f"invalid, {VOTES}"}
    assert not Decision.objects.exists()

    # A candidate humans judged valid is approved as before, with no warning.
    assert (
        curator_client.post(
            "/api/decisions/", {"candidate": accepted.external_id, **APPROVE}, format="json"
        ).status_code
        == 201
    )
    body = {"candidate": rejected.external_id, **APPROVE, "acknowledge_human_verdict": True}
    done = curator_client.post("/api/decisions/", body, format="json")
    assert done.status_code == 201 and done.json()["flag_warning"] == WARNING
    assert Decision.objects.get(candidate=rejected).flag_warning == WARNING
    assert Decision.objects.get(candidate=accepted).flag_warning == ""
    # Rejecting needs no acknowledgement.
    reject = {"candidate": rejected.external_id, "verdict": "reject", "reason": "unrealistic"}
    assert curator_client.post("/api/decisions/", reject, format="json").status_code == 201


def test_approving_what_humans_rejected_needs_the_acknowledgement_on_the_pages(judged, curator_client):
    rejected, _ = judged
    form = {"candidate": rejected.external_id, "revision": rejected.revision, **APPROVE}
    for url in (f"/candidates/review/{rejected.rank}/", f"/candidates/c/{rejected.external_id}/"):
        page = curator_client.get(url).content.decode()
        warning_seen = page.split('name="warning_seen" value="')[1].split('"')[0]
        assert warning_seen == WARNING
        refused = curator_client.post(url, {**form, "warning_seen": WARNING})
        assert refused.status_code == 400
        error = refused.content.decode().split('data-testid="acknowledge-human-error"')[1].split("</div>")[0]
        # It says what to do on this page, and names no API field.
        assert "tick the box that says you have checked it" in error and "(acknowledge_" not in error
        assert not Decision.objects.exists()
    done = curator_client.post(
        f"/candidates/review/{rejected.rank}/", {**form, "warning_seen": WARNING, "acknowledge_human_verdict": "on"}
    )
    assert done.status_code == 302
    assert Decision.objects.get().flag_warning == WARNING


def test_a_warning_that_changed_since_the_page_was_read_is_refused(judged, curator_client):
    rejected, _ = judged
    form = {"candidate": rejected.external_id, "revision": rejected.revision, **APPROVE}
    stale = {**form, "warning_seen": "", "acknowledge_human_verdict": "on"}  # read before the votes came in
    refused = curator_client.post(f"/candidates/c/{rejected.external_id}/", stale)
    assert refused.status_code == 400 and "changed since you opened it" in refused.content.decode()
    assert not Decision.objects.exists()


def test_a_batch_approving_what_humans_rejected_needs_the_acknowledgement(judged, curator_client):
    rejected, accepted = judged
    ids = [rejected.external_id, accepted.external_id]
    body = {"candidates": ids, "verdict": "approve", "reason": "valid"}
    refused = curator_client.post("/api/review/decisions/bulk/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "acknowledge_human_verdict"
    assert refused.json()["human_rejected"] == {rejected.external_id: f"invalid, {VOTES}"}
    assert not Decision.objects.exists()

    # The queue page: refused at the first step and at the confirmed one, nothing recorded.
    form = {"candidates": ids, "verdict": "approve", "reason": "valid", "note": ""}
    for step in ({}, {"confirmed": "1"}):
        page = curator_client.post("/candidates/review/", form | step)
        assert page.status_code == 400
        text = page.content.decode()
        assert "<li>humans judged 1 of these candidates invalid" in text
        # The page names no API field: it says which box to tick.
        assert "acknowledge_human_verdict</b>" not in text and "(acknowledge_human_verdict)" not in text
        assert "tick “Approve candidates humans judged invalid among them anyway”" in text
        assert not Decision.objects.exists()

    # Acknowledged: the confirm step lists each one's human majority, reference check and flags.
    confirm = curator_client.post("/candidates/review/", form | {"acknowledge_human_verdict": "on"})
    assert confirm.status_code == 200
    rows = confirm.content.decode().split('data-testid="confirm-ids"')[1].split("</table>")[0]
    row = rows.split(f'data-candidate="{rejected.external_id}"')[1].split("</tr>")[0]
    assert f"invalid, {VOTES}" in row and 'data-state="not_checked"' in row
    assert 'name="acknowledge_human_verdict" value="on"' in confirm.content.decode()
    assert not Decision.objects.exists()

    done = curator_client.post("/api/review/decisions/bulk/", body | {"acknowledge_human_verdict": True}, format="json")
    assert done.status_code == 201 and done.json()["recorded"] == 2
    assert Decision.objects.get(candidate=rejected).flag_warning == WARNING
    assert Decision.objects.get(candidate=accepted).flag_warning == ""


def test_the_bulk_form_has_no_verdict_until_one_is_chosen(judged, curator_client):
    _, accepted = judged
    queue = curator_client.get("/candidates/review/").content.decode()
    select = queue.split('data-testid="bulk-verdict"')[1].split("</select>")[0]
    assert '<option value="" selected>Choose a verdict…</option>' in select
    assert 'value="reject" selected' not in select and 'value="approve" selected' not in select
    for step in ({}, {"confirmed": "1"}):
        page = curator_client.post(
            "/candidates/review/", {"candidates": [accepted.external_id], "reason": "unrealistic"} | step
        )
        assert page.status_code == 400
        assert "<li>choose approve or reject for the ticked candidates" in page.content.decode()
    assert not Decision.objects.exists()


@pytest.fixture
def draft(judged, curator):
    """Both candidates approved (the rejected one acknowledged) and a draft release."""
    rejected, accepted = judged
    from candidates.curation.review import decision_record

    for candidate in (rejected, accepted):
        decision_record(
            candidate_id=candidate.pk, user=curator, acknowledge_human_verdict=True, verdict="approve", reason="valid"
        )
    return releases.release_create(user=curator, name="veriharm-bench", version="1.0"), rejected, accepted


def test_the_release_draft_lists_each_items_human_majority_reference_check_and_flags(draft, curator_client):
    release, rejected, accepted = draft
    page = curator_client.get(f"/candidates/releases/{release.pk}/").content.decode()
    assert 'data-testid="draft-human-rejected"' in page
    row = page.split(f'<tr data-candidate="{rejected.external_id}"')[1].split("</tr>")[0]
    assert f"invalid, {VOTES}" in row and 'data-state="not_checked"' in row
    other = page.split(f'<tr data-candidate="{accepted.external_id}"')[1].split("</tr>")[0]
    assert 'data-verdict="valid"' in other


def test_freezing_what_humans_rejected_needs_the_acknowledgement(draft, curator_client):
    release, rejected, _ = draft
    refused = curator_client.post(f"/api/releases/{release.pk}/freeze/", {}, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "acknowledge_human_verdict", refused.json()
    assert refused.json()["human_rejected"] == {rejected.external_id: f"invalid, {VOTES}"}
    page = curator_client.post(f"/candidates/releases/{release.pk}/freeze/")
    assert page.status_code == 400 and 'data-testid="acknowledge-human-error"' in page.content.decode()
    release.refresh_from_db()
    assert not release.is_frozen and release.checksum == "" and not ReleaseItem.objects.exists()

    confirm = curator_client.get(f"/candidates/releases/{release.pk}/freeze/").content.decode()
    listed = confirm.split('data-testid="freeze-human-rejected"')[1].split("</section>")[0]
    assert rejected.external_id in listed and f"invalid, {VOTES}" in listed
    assert 'name="acknowledge_human_verdict"' in confirm

    done = curator_client.post(
        f"/api/releases/{release.pk}/freeze/", {"acknowledge_human_verdict": True}, format="json"
    )
    assert done.status_code == 200
    kept = f"{rejected.external_id}: humans judged it invalid (invalid, {VOTES})"
    assert done.json()["frozen_despite"] == kept
    release.refresh_from_db()
    assert release.is_frozen and release.frozen_despite == kept and release.items.count() == 2
    shown = curator_client.get(f"/candidates/releases/{release.pk}/").content.decode()
    assert kept in shown.split('data-testid="frozen-despite"')[1].split("</dd>")[0]


def test_freezing_on_the_page_with_the_acknowledgement(draft, curator_client):
    release, rejected, _ = draft
    response = curator_client.post(f"/candidates/releases/{release.pk}/freeze/", {"acknowledge_human_verdict": "on"})
    assert response.status_code == 302
    assert Release.objects.get(pk=release.pk).frozen_despite.startswith(rejected.external_id)


def test_a_release_without_human_rejections_freezes_without_asking(judged, curator, curator_client):
    _, accepted = judged
    from candidates.curation.review import decision_record

    decision_record(candidate_id=accepted.pk, user=curator, verdict="approve", reason="valid")
    release = releases.release_create(user=curator, name="veriharm-bench", version="1.0")
    assert curator_client.post(f"/api/releases/{release.pk}/freeze/", {}, format="json").status_code == 200
    release.refresh_from_db()
    assert release.is_frozen and release.frozen_despite == ""


def test_adopting_a_release_that_holds_what_humans_rejected_needs_the_acknowledgement(draft, curator, curator_client):
    release, rejected, _ = draft

    def bundle() -> bytes:
        frozen = releases.release_freeze(release.pk, user=curator, acknowledge_human_verdict=True)
        return release_bundle(frozen)[1]

    # The same set frozen elsewhere, brought in as a bundle: the release is not here.
    with transaction.atomic():
        data = bundle()
        transaction.set_rollback(True)
    releases.release_delete(release.pk)
    before = table_counts()

    def upload(**extra):
        return curator_client.post(
            "/api/releases/import/", {"bundle": SimpleUploadedFile("b.tar.gz", data), **extra}, format="multipart"
        )

    refused = upload()
    assert refused.status_code == 400, refused.json()
    assert refused.json()["errors"][0]["field"] == "acknowledge_human_verdict", refused.json()
    assert refused.json()["human_rejected"] == {rejected.external_id: f"invalid, {VOTES}"}
    page = curator_client.post("/candidates/releases/import/", {"bundle": SimpleUploadedFile("b.tar.gz", data)})
    said = html.unescape(page.content.decode())
    assert (
        page.status_code == 400
        and f"humans judged 1 of the release's candidates invalid: {rejected.external_id}" in said
    )
    assert table_counts() == before

    done = upload(acknowledge_human_verdict=True)
    assert done.status_code == 201, done.json()
    kept = f"{rejected.external_id}: humans judged it invalid (invalid, {VOTES})"
    adopted = Release.objects.get(pk=done.json()["id"])
    # Acknowledged here, and carried by the bundle from where it was frozen (its manifest says so).
    assert adopted.is_frozen and adopted.frozen_despite == f"{kept}; in the bundle: {kept}"
