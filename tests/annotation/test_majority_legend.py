"""An item whose three criteria each have a yes majority while its Valid majority is no: right (Valid
is the majority of each annotator's own C1 and C2 and C3), and the pages say so where it shows, with
what the yes–no counts beside each majority count."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.annotation.test_quality_control import label_by_number

pytestmark = pytest.mark.django_db

# Three annotators; on item 1 each rejects a different criterion, or none: C1 2–1, C2 2–1, C3 3–0
# yes, and Valid 1–2 no. Every other item is valid to all three.
PLANS = [(True, True, True), (False, True, True), (True, False, True)]


def _valid_cell(page: str, number: int) -> str:
    row = re.search(rf'<tr class="row-\w+" data-item="{number}".*?</tr>', page, re.S)
    assert row is not None
    cell = re.search(r'<td class="maj" data-measure="valid">(.*?)</td>', row.group(0), re.S)
    assert cell is not None
    return cell.group(1)


def test_the_pages_explain_a_no_valid_majority_under_yes_criteria(pool, annotators, make_study, curator):
    study = make_study(annotators, per_group=1, annotators_per_item=3)
    for person, answers in zip(annotators, PLANS, strict=True):
        label_by_number(study, person, {1: answers, 2: (True, True, True)}, seconds=lambda number: 30.0)
    client = Client()
    client.force_login(curator)

    results = client.get(f"/annotation/studies/{study.pk}/results/").content.decode()
    assert 'data-testid="majority-legend"' in results
    assert "Valid<sub>agg</sub> is the majority of each annotator's own Valid" in results
    odd = _valid_cell(results, 1)
    assert "✗ no" in odd and "1–2" in odd
    assert 'title="1 yes, 2 no: each annotator&#x27;s own Valid' in odd
    assert 'data-testid="valid-explained"' in odd
    assert 'data-testid="valid-explained"' not in _valid_cell(results, 2)

    for url in (f"/annotation/studies/{study.pk}/items/1/", f"/annotation/studies/{study.pk}/disagreement/"):
        page = client.get(url).content.decode()
        assert 'data-testid="majority-legend"' in page, url
        assert page.count('data-testid="valid-explained"') == 1, url
