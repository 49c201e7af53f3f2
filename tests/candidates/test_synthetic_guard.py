"""Synthetic candidates (no model produced their judge scores and Q): every place a curator decides
marks them, and approving one, a batch holding one, or freezing a release that holds one needs an
acknowledgement (pages and API alike) that the decision or the release keeps; refused, nothing changes."""

from __future__ import annotations

import io
import json

import pytest

from candidates.curation.review import decision_record
from candidates.models import Candidate, Decision, Release
from candidates.pool.synthetic import candidates_mark_synthetic
from candidates.releases import services as releases
from candidates.releases.bundle import release_bundle
from candidates.releases.bundle_import import release_bundle_import
from candidates.releases.interop.exports import HARNESS_EXPORTS
from tests.candidates.test_releases import _members, empty_pool, forgotten
from tests.hostile.seed import table_counts

pytestmark = pytest.mark.django_db

SYNTHETIC_ID = "bb-319395/kimi-k2.5/gpt-5.5"
PLAIN_ID = "bb-187101/gpt-5.4-mini/claude-opus-4-7"
WARNING = "Synthetic: no model produced its judge scores and Q."
APPROVE = {"verdict": "approve", "reason": "valid", "note": ""}
TAG = 'data-testid="synthetic-tag"'


@pytest.fixture
def pair(examples_imported) -> tuple[Candidate, Candidate]:
    assert candidates_mark_synthetic([SYNTHETIC_ID]) == 1
    return Candidate.objects.get(external_id=SYNTHETIC_ID), Candidate.objects.get(external_id=PLAIN_ID)


def _row(page: str, external_id: str) -> str:
    return page.split(f'data-candidate="{external_id}"')[1].split("</tr>")[0]


def test_the_ranking_queue_and_candidate_page_mark_a_synthetic_candidate(pair, curator_client):
    synthetic, plain = pair
    ranking = curator_client.get("/candidates/").content.decode()
    assert "Synthetic data: 1 candidate of this pool is synthetic" in ranking
    assert ranking.count(TAG) == 1
    queue = curator_client.get("/candidates/review/").content.decode()
    assert TAG in _row(queue, synthetic.external_id) and TAG not in _row(queue, plain.external_id)
    assert 'data-testid="bulk-acknowledge-synthetic"' in queue
    page = curator_client.get(f"/candidates/c/{synthetic.external_id}/").content.decode()
    assert "no model produced its judge scores and Q" in page and 'data-testid="acknowledge-synthetic"' in page
    other = curator_client.get(f"/candidates/c/{plain.external_id}/").content.decode()
    assert 'data-testid="demo-banner"' not in other and 'data-testid="acknowledge-synthetic"' not in other


def test_approving_a_synthetic_candidate_needs_the_acknowledgement_over_the_api(pair, curator_client):
    synthetic, plain = pair
    before = table_counts()
    refused = curator_client.post("/api/decisions/", {"candidate": synthetic.external_id, **APPROVE}, format="json")
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "acknowledge_synthetic"
    assert refused.json()["synthetic"] == [synthetic.external_id]
    assert table_counts() == before
    body = {"candidate": synthetic.external_id, **APPROVE, "acknowledge_synthetic": True}
    done = curator_client.post("/api/decisions/", body, format="json")
    assert done.status_code == 201 and done.json()["flag_warning"] == WARNING
    # Another candidate needs nothing, and keeps no warning.
    plain_body = {"candidate": plain.external_id, **APPROVE}
    assert curator_client.post("/api/decisions/", plain_body, format="json").status_code == 201
    assert Decision.objects.get(candidate=plain).flag_warning == ""


def test_approving_a_synthetic_candidate_needs_the_acknowledgement_on_the_pages(pair, curator_client):
    synthetic, _ = pair
    form = {"candidate": synthetic.external_id, "revision": synthetic.revision, **APPROVE}
    for url in (f"/candidates/review/{synthetic.rank}/", f"/candidates/c/{synthetic.external_id}/"):
        page = curator_client.get(url).content.decode()
        assert page.split('name="warning_seen" value="')[1].split('"')[0] == WARNING
        refused = curator_client.post(url, {**form, "warning_seen": WARNING})
        assert refused.status_code == 400
        error = refused.content.decode().split('data-testid="acknowledge-synthetic-error"')[1].split("</div>")[0]
        assert "it is synthetic" in error and "tick the box that says you know" in error
        assert not Decision.objects.exists()
    done = curator_client.post(
        f"/candidates/c/{synthetic.external_id}/", {**form, "warning_seen": WARNING, "acknowledge_synthetic": "on"}
    )
    assert done.status_code == 302
    assert Decision.objects.get().flag_warning == WARNING


def test_a_batch_holding_a_synthetic_candidate_is_refused_whole_without_the_acknowledgement(pair, curator_client):
    synthetic, plain = pair
    ids = [synthetic.external_id, plain.external_id]
    before = table_counts()
    body = {"candidates": ids, "verdict": "approve", "reason": "valid"}
    refused = curator_client.post("/api/review/decisions/bulk/", body, format="json")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "acknowledge_synthetic"
    form = {"candidates": ids, "verdict": "approve", "reason": "valid", "note": ""}
    for step in ({}, {"confirmed": "1"}):
        assert curator_client.post("/candidates/review/", form | step).status_code == 400
    assert table_counts() == before
    confirm = curator_client.post("/candidates/review/", form | {"acknowledge_synthetic": "on"})
    assert confirm.status_code == 200
    assert TAG in _row(confirm.content.decode(), synthetic.external_id)
    assert 'name="acknowledge_synthetic" value="on"' in confirm.content.decode()
    done = curator_client.post("/candidates/review/", form | {"acknowledge_synthetic": "on", "confirmed": "1"})
    assert done.status_code == 302
    assert Decision.objects.get(candidate=synthetic).flag_warning == WARNING
    assert Decision.objects.get(candidate=plain).flag_warning == ""


def test_freezing_a_release_that_holds_a_synthetic_candidate_needs_the_acknowledgement(pair, curator, curator_client):
    synthetic, plain = pair
    decision_record(
        candidate_id=synthetic.pk, user=curator, verdict="approve", reason="valid", acknowledge_synthetic=True
    )
    decision_record(candidate_id=plain.pk, user=curator, verdict="approve", reason="valid")
    release = releases.release_create(user=curator, name="veriharm-bench", version="1.0")
    draft = curator_client.get(f"/candidates/releases/{release.pk}/").content.decode()
    assert TAG in _row(draft, synthetic.external_id) and TAG not in _row(draft, plain.external_id)
    assert "1 of them is synthetic" in draft

    before = table_counts()
    refused = curator_client.post(f"/api/releases/{release.pk}/freeze/", {}, format="json")
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "acknowledge_synthetic"
    assert refused.json()["synthetic"] == [synthetic.external_id]
    page = curator_client.post(f"/candidates/releases/{release.pk}/freeze/")
    assert page.status_code == 400 and 'data-testid="acknowledge-synthetic-error"' in page.content.decode()
    assert table_counts() == before and not Release.objects.get(pk=release.pk).is_frozen
    confirm = curator_client.get(f"/candidates/releases/{release.pk}/freeze/").content.decode()
    assert 'data-testid="freeze-synthetic"' in confirm and 'data-testid="acknowledge-synthetic"' in confirm

    done = curator_client.post(f"/candidates/releases/{release.pk}/freeze/", {"acknowledge_synthetic": "on"})
    assert done.status_code == 302
    frozen = Release.objects.get(pk=release.pk)
    assert frozen.is_frozen
    assert frozen.frozen_despite == f"{synthetic.external_id}: synthetic, no model produced its judge scores and Q"


def test_a_release_frozen_with_a_synthetic_candidate_says_so_in_its_bundle_and_keeps_it_where_adopted(
    pair, curator, admin_user
):
    synthetic, plain = pair

    def build() -> tuple[bytes, dict[str, dict[str, bytes]]]:
        for candidate, acknowledged in ((synthetic, True), (plain, False)):
            decision_record(
                candidate_id=candidate.pk,
                user=curator,
                verdict="approve",
                reason="valid",
                acknowledge_synthetic=acknowledged,
            )
        release = releases.release_create(user=curator, name="veriharm-bench", version="1.0")
        release = releases.release_freeze(release.pk, user=curator, acknowledge_synthetic=True)
        return release_bundle(release)[1], {name: e.files(release)[1] for name, e in HARNESS_EXPORTS.items()}

    data, exports = forgotten(build)
    # The bundle's top files, by name (they sit in its root folder).
    members = {path.split("/", 1)[1]: content for path, content in _members(data).items()}
    said = f"{synthetic.external_id}: synthetic, no model produced its judge scores and Q"
    manifest = json.loads(members["manifest.json"])
    assert manifest["release"]["frozen_despite"] == said
    assert (
        f"**Frozen despite** (acknowledged by its curator; also in `manifest.json`): {said}"
        in members["README.md"].decode()
    )
    # The exports for Inspect AI and Harbor say so too, beside the release they describe.
    assert json.loads(exports["inspect"]["release.json"])["release"]["frozen_despite"] == said
    assert json.loads(exports["harbor"]["veriharm.json"])["release"]["frozen_despite"] == said
    # Into a database that never held it: the release keeps what it was frozen despite.
    empty_pool()
    adopted = release_bundle_import(io.BytesIO(data), user=admin_user).release
    assert adopted.is_frozen and adopted.frozen_despite == f"in the bundle: {said}"
