"""Labels given too quickly to have read the task: the results page warns of them and shows the
agreement and Q's predictive figures without them beside the figures on every label."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.models import Group
from annotation.studies.selectors import quality
from tests.annotation.test_quality_control import label_by_number

pytestmark = pytest.mark.django_db

VALID = (True, True, True)
INVALID = (True, False, True)


def _rows(page: str, figure: str) -> list[list[str]]:
    """The cells (heading first) of the rows of the quick-labels table showing `figure`."""
    rows = re.findall(rf'<tr data-figure="{figure}">(.*?)</tr>', page, re.S)
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
        for row in rows
    ]


def test_the_results_warn_of_quick_labels_and_show_the_figures_without_them(pool, annotators, make_study, curator):
    study = make_study(annotators, per_group=2, annotators_per_item=3)
    top = {item.number: item.group == Group.TOP for item in study.items.all()}
    careful = {number: VALID if is_top else INVALID for number, is_top in top.items()}
    hasty = {number: INVALID if is_top else VALID for number, is_top in top.items()}
    label_by_number(study, annotators[0], hasty, seconds=lambda number: 1.2)
    for person in annotators[1:]:
        label_by_number(study, person, careful, seconds=lambda number: 40.0)
    assert quality.is_quick(1.2) and not quality.is_quick(40.0)

    client = Client()
    client.force_login(curator)
    page = client.get(f"/annotation/studies/{study.pk}/results/").content.decode()
    assert 'data-testid="quick-labels"' in page
    assert "4 of 12 labels (33.3%) were given in under 2 s" in page
    assert _rows(page, "labels") == [["Labels", "12", "8"]]
    # The two careful annotators agree on every item: Krippendorff's alpha on Valid is 1 without
    # the hasty one, who disagreed with them on every item; Fleiss' kappa needs all three labels.
    valid = [row for row in _rows(page, "agreement") if row[0].startswith("Valid")]
    assert len(valid) == 1
    _, every, without = valid[0]
    assert without == "undefined · 1.000"
    assert every != without and "1.000" not in every
    assert _rows(page, "decided") == [["Items with Validagg", "4", "4"]]
    assert _rows(page, "accuracy") == [["Q as a predictor: accuracy", "100.0%", "100.0%"]]


def test_no_warning_without_quick_labels(pool, annotators, make_study, curator):
    study = make_study(annotators, per_group=2, annotators_per_item=3)
    plan = {item.number: VALID for item in study.items.all()}
    for person in annotators:
        label_by_number(study, person, plan, seconds=lambda number: 40.0)
    client = Client()
    client.force_login(curator)
    page = client.get(f"/annotation/studies/{study.pk}/results/").content.decode()
    assert 'data-testid="quick-labels"' not in page


def test_when_every_label_was_quick_the_page_says_why_there_are_no_figures_without_them(
    pool, annotators, make_study, curator
):
    study = make_study(annotators, per_group=1, annotators_per_item=3)
    plan = {item.number: VALID for item in study.items.all()}
    for person in annotators:
        label_by_number(study, person, plan, seconds=lambda number: 0.5)
    client = Client()
    client.force_login(curator)
    page = client.get(f"/annotation/studies/{study.pk}/results/").content.decode()
    assert "6 of 6 labels (100.0%) were given in under 2 s" in page
    assert "Every label was quick, so there are no other labels" in page
    assert 'data-testid="without-quick"' not in page
