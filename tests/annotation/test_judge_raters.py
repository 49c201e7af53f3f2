"""The judges beside the annotators on a study's results: the page and its API twin show the same
numbers, curators and viewers read them, annotators are refused and see no judge anywhere."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Assignment, Group, Study, StudyMember
from tests.annotation.test_blindness import walk
from tests.conftest import make_user
from tests.factories import CandidateFactory, CandidateLineFactory, StudyFactory, StudyItemFactory, with_judges
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db

Y, N = (True, True, True), (True, False, True)  # a label: valid, and invalid (C2 no)
A5, A4, A3, A2, A1 = (5,) * 5, (4,) * 5, (3,) * 5, (2,) * 5, (1,) * 5

# (group, labels of A1..A3 (None: not labelled), judge-1's and judge-2's scores (judge-2 None: not scored))
ITEMS: list[tuple[str, list[tuple[bool, bool, bool] | None], tuple[int, ...], tuple[int, ...] | None]] = [
    (Group.TOP, [Y, Y, Y], A5, A3),  # 1: majority valid; judge-1 valid (25), judge-2 invalid (15)
    (Group.TOP, [Y, Y, N], A4, A5),  # 2: valid; valid (20), valid (25)
    (Group.TOP, [N, N, Y], (5, 5, 5, 5, 2), A4),  # 3: invalid; invalid (22: stealth 2), valid (20)
    (Group.BOTTOM, [N, N, N], A2, A2),  # 4: invalid; invalid (10), invalid (10)
    (Group.BOTTOM, [Y, Y, Y], (4, 4, 2, 2, 4), A1),  # 5: valid; valid (16), invalid (5)
    (Group.BOTTOM, [Y, N, None], A5, A5),  # 6: no majority yet (1 of 3 votes each way)
    (Group.BOTTOM, [N, N, N], A1, None),  # 7: invalid; invalid (5), judge-2 did not score it
]
JUDGE_NAMES = ("judge-1", "judge-2")


@pytest.fixture
def judged_study(annotators) -> Study:
    study = StudyFactory(top_k=3, per_group=4, annotators_per_item=3)
    for i, user in enumerate(annotators, start=1):
        StudyMember.objects.create(study=study, user=user, pseudonym=f"A{i}")
    now = timezone.now()
    for number, (group, labels, first, second) in enumerate(ITEMS, start=1):
        line = CandidateLineFactory(id=f"judged-{number}")
        candidate = CandidateFactory(line=with_judges(line, first, *([second] if second else [])))
        item = StudyItemFactory(study=study, candidate=candidate, number=number, group=group)
        for user, answers in zip(annotators, labels, strict=True):
            if answers is not None:
                Assignment.objects.create(
                    study=study,
                    item=item,
                    annotator=user,
                    claimed_at=now,
                    expires_at=now + timedelta(hours=1),
                    submitted_at=now,
                    c1=answers[0],
                    c2=answers[1],
                    c3=answers[2],
                )
    return study


def _row(page: str, attribute: str, judge: str) -> str:
    match = re.search(rf'<tr {attribute}="{re.escape(judge)}">(.*?)</tr>', page, re.S)
    assert match, (attribute, judge)
    return match[1]


def _field(row: str, name: str) -> str:
    match = re.search(rf'data-field="{name}">(.*?)</td>', row, re.S)
    assert match, name
    return re.sub(r"<[^>]+>", "", match[1]).strip()


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"{low * 100:.1f}–{high * 100:.1f}%"


def test_the_page_and_the_api_show_the_same_judges(judged_study, curator_client):
    body = curator_client.get(f"/api/annotation/studies/{judged_study.pk}/results/").json()
    page = curator_client.get(f"/annotation/studies/{judged_study.pk}/results/").content.decode()
    judges = {j["judge"]: j for j in body["judges"]}
    assert list(judges) == list(JUDGE_NAMES)

    # judge-1 agrees with the majority on all six decided items: 2x2 table 3 / 0 / 0 / 3.
    one = judges["judge-1"]["valid_agreement"]
    assert one["table"] == {"both_valid": 3, "judge_only": 0, "majority_only": 0, "neither": 3}
    assert (one["n"], one["accuracy"], one["cohen_kappa"]["value"]) == (6, 1.0, 1.0)
    assert (one["left_out_no_majority"], one["left_out_unscored"]) == (1, 0)
    # judge-2 on items 1-5 (7 unscored, 6 without a majority): valid on 2 and 3, invalid on 1, 4 and 5.
    two = judges["judge-2"]["valid_agreement"]
    assert two["table"] == {"both_valid": 1, "judge_only": 1, "majority_only": 2, "neither": 1}
    assert (two["n"], two["accuracy"]) == (5, 0.4)
    # p_o 0.4; p_e = (2/5)(3/5) + (3/5)(2/5) = 0.48; kappa = (0.4 - 0.48) / 0.52.
    assert two["cohen_kappa"]["value"] == pytest.approx(-0.08 / 0.52)
    assert (two["left_out_no_majority"], two["left_out_unscored"]) == (1, 1)
    # judge-1's sum: three top items among the six grouped ones it scored; its three highest sums
    # are 25 (1), 25 (6) and 22 (3): 1 TP, 3 FP; 2 (20) FN, 5 FN; 4 TN, 7 TN (6 has no majority).
    p1 = judges["judge-1"]["sum_as_predictor"]
    assert p1["confusion"] == {"tp": 1, "fp": 1, "fn": 2, "tn": 2}
    assert judges["judge-2"]["sum_left_out_unscored"] == 1
    assert "4 or 5" in body["judge_valid_rule"] and "C1 ∧ C2 ∧ C3" in body["judge_valid_rule"]

    assert body["judge_valid_rule"] in page.replace("&#x27;", "'")
    for name, judge in judges.items():
        v = judge["valid_agreement"]
        row = _row(page, "data-judge", name)
        assert _field(row, "n") == str(v["n"])
        assert _field(row, "accuracy") == _percent(v["accuracy"])
        assert _field(row, "interval") == _interval(v["accuracy_ci_low"], v["accuracy_ci_high"])
        assert _field(row, "kappa").startswith(f"{v['cohen_kappa']['value']:.3f}")
        assert _field(row, "left-out") == (
            f"{v['left_out_no_majority']} without a majority, {v['left_out_unscored']} not scored"
        )
        p = judge["sum_as_predictor"]
        prow = _row(page, "data-predictor", name)
        assert _field(prow, "n") == str(sum(p["confusion"].values()))
        assert _field(prow, "confusion") == " · ".join(str(p["confusion"][k]) for k in ("tp", "fp", "fn", "tn"))
        for metric in ("accuracy", "precision", "recall", "valid_share_top", "valid_share_bottom"):
            shown = f"{_percent(p[metric])} {_interval(p[metric + '_ci_low'], p[metric + '_ci_high'])}".strip()
            assert _field(prow, metric.replace("_", "-")) == shown, (name, metric)
    # The Wilson interval of 6 of 6 is not a point at 100%.
    assert one["accuracy_ci_low"] < 1.0 == one["accuracy_ci_high"]

    # The study's JSON export, page and API, carries the same judges in its results.
    for url in (
        f"/annotation/studies/{judged_study.pk}/export/study.json",
        f"/api/annotation/studies/{judged_study.pk}/export/",
    ):
        exported = curator_client.get(url).json()["results"]
        assert exported["judges"] == body["judges"] and exported["judge_valid_rule"] == body["judge_valid_rule"]


def test_a_viewer_reads_the_judges_too(judged_study, client: Client):
    client.force_login(make_user("reader", VIEWER))
    assert client.get(f"/annotation/studies/{judged_study.pk}/results/").status_code == 200
    response = client.get(f"/api/annotation/studies/{judged_study.pk}/results/")
    assert response.status_code == 200 and len(response.json()["judges"]) == 2


def test_annotators_are_refused_the_judges_and_see_none_in_their_own_responses(judged_study, annotators):
    me = annotators[2]  # A3 has not labelled item 6, so it still has something to claim
    pages, api = Client(), APIClient()
    pages.force_login(me)
    api.force_authenticate(me)
    assert pages.get(f"/annotation/studies/{judged_study.pk}/results/").status_code == 403
    assert api.get(f"/api/annotation/studies/{judged_study.pk}/results/").status_code == 403

    claimed = api.post(f"/api/annotation/my/studies/{judged_study.pk}/next/")
    assert claimed.status_code == 200
    token = claimed.json()["item"]["token"]
    responses: dict[str, Any] = {"next": claimed}
    for url in (
        "/api/annotation/my/studies/",
        f"/api/annotation/my/studies/{judged_study.pk}/items/{token}/",
        f"/api/annotation/my/studies/{judged_study.pk}/progress/",
        f"/api/annotation/my/studies/{judged_study.pk}/labels/",
    ):
        responses[url] = api.get(url)
    for url in ("/annotation/", f"/annotation/s/{judged_study.pk}/i/{token}/"):
        responses[url] = pages.get(url)
    judge_keys = {"judges", "judge", "judgements", "valid_agreement", "sum_as_predictor", "judge_valid_rule"}
    for url, response in responses.items():
        assert response.status_code == 200, url
        text = response.content.decode()
        assert not any(name in text for name in JUDGE_NAMES), url
        if response["Content-Type"].startswith("application/json"):
            assert not [key for _, key, _ in walk(json.loads(text)) if key in judge_keys], url
