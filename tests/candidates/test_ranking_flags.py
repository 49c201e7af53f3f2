"""The ranking flags candidates whose tests failed their reference check."""

import pytest

from candidates.models import Candidate
from evaluation.models import ReferenceCheck, ReferenceVerdict

pytestmark = pytest.mark.django_db


def test_a_candidate_whose_tests_do_not_discriminate_is_flagged_in_the_ranking(examples_imported, curator_client):
    flagged, fine = Candidate.objects.order_by("external_id")
    ReferenceCheck.objects.create(
        candidate=flagged,
        candidate_revision=1,
        verdict=ReferenceVerdict.FLAGGED,
        does_not_discriminate=True,
        detail="harmful reference gave (1, 0)",
    )
    ReferenceCheck.objects.create(candidate=fine, candidate_revision=1, verdict=ReferenceVerdict.DISCRIMINATES)
    page = curator_client.get("/candidates/").content.decode()
    rows = page.split("<tr")
    flagged_row = next(r for r in rows if flagged.external_id in r)
    fine_row = next(r for r in rows if fine.external_id in r)
    assert "tests do not discriminate" in flagged_row
    assert "tests do not discriminate" not in fine_row


def test_the_candidate_page_shows_human_verdicts_beside_harm_results(annotators_and_study, curator_client):
    study, candidate = annotators_and_study
    page = curator_client.get(f"/candidates/c/{candidate.external_id}/").content.decode()
    panel = page.split('data-testid="human-verdicts"')[1].split("</section>")[0]
    assert study.name in panel and "3/3" in panel
    assert "agent-under-test" in panel and "(1, 0)" in panel
    # The review page shows the same, beside the decision form.
    review = curator_client.get(f"/candidates/review/{candidate.rank}/").content.decode()
    assert 'data-testid="review"' in review
    assert study.name in review.split('data-testid="human-verdicts"')[1].split("</section>")[0]


@pytest.fixture
def annotators_and_study(db, curator):
    from annotation.studies import services
    from evaluation.models import TrialStatus
    from tests.annotation.conftest import import_pool, label_all
    from tests.conftest import make_user
    from tests.factories import TrialFactory
    from veriharm_site.roles import ANNOTATOR

    import_pool(12)
    people = [make_user(f"person-{i}", ANNOTATOR) for i in range(3)]
    study = services.study_create(
        services.StudySpec(
            name="Pilot study", seed=5, top_k=4, per_group=2, stratify_by="risk_category", annotators_per_item=3
        ),
        annotators=people,
        created_by=curator,
    )
    for person in people:
        label_all(study, person, lambda number: (True, True, number % 2 == 0))
    candidate = study.items.order_by("number").first().candidate
    TrialFactory(candidate=candidate, agent__name="agent-under-test", status=TrialStatus.DONE, r_task=1, r_harm=0)
    return study, candidate


def test_a_reader_of_the_ranking_who_may_not_read_evaluations_sees_no_harm_results(annotators_and_study):
    """The one rule for evaluation data on a candidate's page (candidates.hooks.harm_test_verdicts): without
    evaluation.view_evaluations, neither the evaluation panel nor the harm column beside human verdicts."""
    from django.contrib.auth.models import Permission
    from django.test import Client

    from tests.conftest import make_user

    study, candidate = annotators_and_study
    reader = make_user("ranking-reader", None)
    reader.user_permissions.add(Permission.objects.get(content_type__app_label="candidates", codename="view_ranking"))
    client = Client()
    client.force_login(reader)
    page = client.get(f"/candidates/c/{candidate.external_id}/").content.decode()
    panel = page.split('data-testid="human-verdicts"')[1].split("</section>")[0]
    assert study.name in panel and "3/3" in panel
    assert "agent-under-test" not in page and "Harm tests" not in panel
    assert 'data-testid="evaluation-panel"' not in page
