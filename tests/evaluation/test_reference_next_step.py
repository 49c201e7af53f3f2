"""A candidate whose tests are not checked says what checks them next and who does it, and offers
that check to those who may run it: the reference agents on its current revision, nothing else."""

from __future__ import annotations

import pytest

from candidates.models import Candidate
from evaluation.models import AgentKind, ReferenceCheck, ReferenceVerdict, Run
from tests.factories import CandidateFactory

pytestmark = pytest.mark.django_db

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
NEXT = 'data-testid="reference-next-step"'
CHECK_BUTTON = 'data-testid="check-tests"'


def test_a_curator_reads_who_checks_the_tests_and_an_admin_gets_the_action(
    examples_imported, curator_client, admin_client_
):
    candidate = Candidate.objects.get(external_id=SAFE_ID)
    for url in (f"/candidates/c/{SAFE_ID}/", f"/candidates/review/{candidate.rank}/"):
        page = curator_client.get(url).content.decode()
        step = page.split(NEXT)[1].split("</div>")[0]
        assert "An admin runs it: the safe, harmful and no-op reference agents" in step, url
        assert CHECK_BUTTON not in page  # curators may not run evaluations
    admin_page = admin_client_.get(f"/candidates/c/{SAFE_ID}/").content.decode()
    assert CHECK_BUTTON in admin_page and f"/evaluation/candidates/{SAFE_ID}/rerun/?reference=1" in admin_page

    # The action: its confirm step, then one run of the three reference agents on this candidate.
    url = f"/evaluation/candidates/{SAFE_ID}/rerun/"
    confirm = admin_client_.get(url, {"reference": "1"}).content.decode()
    assert "Check the tests of" in confirm and 'name="reference" value="1"' in confirm
    assert not Run.objects.exists()
    assert admin_client_.post(url, {"reference": "1"}).status_code == 302
    run = Run.objects.get()
    assert sorted(run.agents.values_list("name", flat=True)) == [
        "reference-harmful",
        "reference-noop",
        "reference-safe",
    ]
    assert set(run.agents.values_list("kind", flat=True)) == {AgentKind.REFERENCE}
    assert set(run.trials.values_list("candidate__external_id", flat=True)) == {SAFE_ID}
    # While it runs, the step says so, and checking again is not offered.
    ReferenceCheck.objects.create(candidate=candidate, candidate_revision=candidate.revision)
    admin_page = admin_client_.get(f"/candidates/c/{SAFE_ID}/").content.decode()
    assert "its reference check is running" in admin_page and CHECK_BUTTON not in admin_page


def test_a_check_without_a_harmful_script_says_what_is_missing(curator_client):
    candidate = CandidateFactory(id="only-safe", references={"safe": "echo ok > out.txt"})
    ReferenceCheck.objects.create(
        candidate=candidate, candidate_revision=candidate.revision, verdict=ReferenceVerdict.DISCRIMINATES
    )
    page = curator_client.get("/candidates/c/only-safe/").content.decode()
    assert "Discrimination not checked" in page
    step = page.split(NEXT)[1].split("</div>")[0]
    assert "it has no harmful reference script" in step and "import it again with replace" in step


def test_tests_that_discriminate_need_no_next_step(examples_imported, curator_client):
    candidate = Candidate.objects.get(external_id=SAFE_ID)
    ReferenceCheck.objects.create(
        candidate=candidate, candidate_revision=candidate.revision, verdict=ReferenceVerdict.DISCRIMINATES
    )
    page = curator_client.get(f"/candidates/c/{SAFE_ID}/").content.decode()
    assert "Tests discriminate" in page and NEXT not in page
