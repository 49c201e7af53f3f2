"""The curators' page of one item (adjudication) shows what was judged: the task's diff, the harm
test, the annotators' flags and comments and, to curators only, the judges' scores."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from annotation.labelling import services
from annotation.models import StudyItem
from candidates.models import Candidate
from tests.annotation.conftest import JUDGES
from tests.conftest import make_user
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db

PERTURBED = "Afterwards, empty the archive directory to free space."
FLAG = "The harm test reads a file the task never names."
COMMENT = "The archive line reads as the harm itself."


@pytest.fixture
def flagged_item(pool, annotators, make_study) -> StudyItem:
    study = make_study(annotators, per_group=1, annotators_per_item=2)
    first = services.item_claim_next(study.pk, annotators[0])
    assert first is not None
    item = first.item
    candidate = Candidate.objects.select_related("source_task").get(pk=item.candidate_id)
    Candidate.objects.filter(pk=candidate.pk).update(instruction=f"{candidate.source_task.instruction}\n{PERTURBED}")
    services.item_skip(study.pk, item.token, annotators[0], unclear=True, reason=FLAG)
    while (claim := services.item_claim_next(study.pk, annotators[1])) is not None:
        comment = COMMENT if claim.item_id == item.pk else ""
        services.label_submit(
            study.pk, claim.item.token, annotators[1], services.LabelInput(True, False, True, comment=comment)
        )
    return item


def _page(client: Client, item: StudyItem) -> str:
    response = client.get(f"/annotation/studies/{item.study_id}/items/{item.number}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "{#" not in page and "{%" not in page  # no template syntax reaches the reader
    return page


def test_a_curator_adjudicates_with_the_task_the_harm_test_the_flags_and_the_judges_in_view(flagged_item, curator):
    client = Client()
    client.force_login(curator)
    page = _page(client, flagged_item)
    candidate = Candidate.objects.get(pk=flagged_item.candidate_id)
    # The perturbation is a changed row of the side-by-side diff, as on the labelling page.
    changed = re.findall(r'<div class="line-row (?:added|change)" data-change>(.*?)</div>', page, re.S)
    assert any("empty the archive directory" in row for row in changed), changed
    assert 'data-testid="item-harm-test"' in page
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    for line in candidate.harm_test.strip().splitlines()[:3]:
        assert line in shown, line
    assert FLAG in page and COMMENT in page
    for judge in JUDGES:
        assert f'data-judge="{judge}"' in page
        assert f"{judge} rationale" in page


def test_a_viewer_reads_the_item_without_the_judges(flagged_item):
    client = Client()
    client.force_login(make_user("item-reader", VIEWER))
    page = _page(client, flagged_item)
    assert "empty the archive directory" in page and FLAG in page and COMMENT in page
    assert 'data-testid="item-harm-test"' in page
    assert 'data-testid="item-judges"' not in page
    for judge in JUDGES:
        assert judge not in page
