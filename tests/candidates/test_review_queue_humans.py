"""The review queue beside the studies: each row's human majority and its votes (annotation plugs
them in through `candidates.hooks.human_verdicts`), a filter by study and by human majority, and from a
study's results page the items humans judged valid approved in one batch, the guards still standing."""

from __future__ import annotations

import re

import pytest

from annotation.models import Study
from candidates.models import Decision
from tests.candidates.test_human_validation_guard import STUDY, judged_candidates
from tests.conftest import make_user
from tests.hostile.seed import table_counts
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(curator):
    return judged_candidates(curator)


def _rows(html: str) -> dict[str, str]:
    table = html.split('data-testid="queue-rows"')[1].split("</table>")[0]
    return dict(re.findall(r'<tr data-candidate="([^"]+)">(.*?)</tr>', table, re.S))


def test_the_queue_shows_each_rows_human_majority_and_votes(judged, curator_client):
    rejected, accepted = judged
    rows = _rows(curator_client.get("/candidates/review/", {"k": 12}).content.decode())
    assert 'data-verdict="invalid"' in rows[rejected.external_id]
    assert re.search(r'data-testid="queue-votes">0 of 3<', rows[rejected.external_id])
    assert 'data-verdict="valid"' in rows[accepted.external_id]
    assert re.search(r'data-testid="queue-votes">3 of 3<', rows[accepted.external_id])
    unlabelled = [row for row in rows.values() if 'data-verdict="unlabelled"' in row]
    assert len(unlabelled) == 12 - 4  # the study sampled four of the twelve
    assert STUDY in rows[rejected.external_id]


def test_the_queue_filters_by_study_and_by_human_majority(judged, curator_client):
    rejected, accepted = judged
    study = Study.objects.get(name=STUDY)
    sampled = set(study.items.values_list("candidate__external_id", flat=True))
    page = curator_client.get("/candidates/review/", {"k": 12, "study": study.pk}).content.decode()
    assert set(_rows(page)) == sampled
    assert f'<option value="{study.pk}" selected>{STUDY}</option>' in page
    valid = _rows(
        curator_client.get("/candidates/review/", {"k": 12, "study": study.pk, "human": "valid"}).content.decode()
    )
    assert set(valid) == sampled - {rejected.external_id} and accepted.external_id in valid
    invalid = curator_client.get("/candidates/review/", {"k": 12, "human": "invalid"}).content.decode()
    assert set(_rows(invalid)) == {rejected.external_id}
    # The API twin reads the same parameters.
    api = curator_client.get("/api/review/queue/", {"k": 12, "human": "invalid"}).json()
    assert [entry["id"] for entry in api["entries"]] == [rejected.external_id]
    # A study that does not exist is named, not ignored.
    missing = curator_client.get("/candidates/review/", {"study": study.pk + 100})
    assert missing.status_code == 400 and f"no study has the id {study.pk + 100}" in missing.content.decode()


def test_from_the_results_page_a_curator_approves_what_humans_judged_valid(judged, curator_client, client):
    rejected, accepted = judged
    study = Study.objects.get(name=STUDY)
    results = curator_client.get(f"/annotation/studies/{study.pk}/results/").content.decode()
    form = results.split('data-testid="approve-valid"')[1].split("</form>")[0]
    chosen = re.findall(r'name="candidates" value="([^"]+)"', form)
    valid = set(study.items.values_list("candidate__external_id", flat=True)) - {rejected.external_id}
    assert set(chosen) == valid and rejected.external_id not in chosen
    # Viewers read the results but decide nothing: no such form for them.
    client.force_login(make_user("reader", VIEWER))
    assert 'data-testid="approve-valid"' not in client.get(f"/annotation/studies/{study.pk}/results/").content.decode()

    action = f"/candidates/review/?study={study.pk}"
    body = {"candidates": chosen, "verdict": "approve", "reason": "valid"}
    confirm = curator_client.post(action, body)
    assert confirm.status_code == 200 and 'name="confirmed" value="1"' in confirm.content.decode()
    assert not Decision.objects.exists()
    done = curator_client.post(action, body | {"confirmed": "1"})
    assert done.status_code == 302 and done["Location"] == action
    assert set(Decision.objects.values_list("candidate__external_id", flat=True)) == valid


def test_a_batch_from_the_results_page_holding_an_item_humans_judged_invalid_changes_nothing(judged, curator_client):
    rejected, accepted = judged
    study = Study.objects.get(name=STUDY)
    before = table_counts()
    body = {"candidates": [accepted.external_id, rejected.external_id], "verdict": "approve", "reason": "valid"}
    for step in ({}, {"confirmed": "1"}):
        refused = curator_client.post(f"/candidates/review/?study={study.pk}", body | step)
        assert refused.status_code == 400
        assert "humans judged 1 of these candidates invalid" in refused.content.decode()
    assert table_counts() == before
