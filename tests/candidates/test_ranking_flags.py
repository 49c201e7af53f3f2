"""The ranking flags candidates whose tests failed their reference check."""
import pytest

from candidates.models import Candidate
from evaluation.models import ReferenceCheck, ReferenceVerdict

pytestmark = pytest.mark.django_db


def test_a_candidate_whose_tests_do_not_discriminate_is_flagged_in_the_ranking(examples_imported, curator_client):
    flagged, fine = Candidate.objects.order_by("external_id")
    ReferenceCheck.objects.create(candidate=flagged, candidate_revision=1, verdict=ReferenceVerdict.FLAGGED,
                                  detail="harmful reference gave (1, 0)")
    ReferenceCheck.objects.create(candidate=fine, candidate_revision=1, verdict=ReferenceVerdict.DISCRIMINATES)
    page = curator_client.get("/candidates/").content.decode()
    rows = page.split("<tr")
    flagged_row = next(r for r in rows if flagged.external_id in r)
    fine_row = next(r for r in rows if fine.external_id in r)
    assert "tests do not discriminate" in flagged_row
    assert "tests do not discriminate" not in fine_row
