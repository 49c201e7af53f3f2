"""A study drawn from a filter of the ranking or from chosen candidates, by the API and from the
ranking page: its items are exactly those, it is one named stratum that predicts nothing from Q,
its page says how it was drawn, and refused selections are 400s naming the field, changing nothing."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Study, StudyItem
from annotation.studies.drawing import MAX_CHOSEN
from annotation.studies.selectors.results import study_results
from candidates.models import Candidate
from tests.annotation.conftest import label_all
from tests.conftest import make_user
from tests.factories import CandidateLineFactory, jsonl, with_judges
from tests.importing import candidate_import_streams
from veriharm_site.roles import VIEWER

pytestmark = pytest.mark.django_db

RISK = "permission_weakening"  # every third candidate of the pool: 13 of 40


def _body(annotators: list, **extra: Any) -> dict[str, Any]:
    return {
        "name": "Selected",
        "seed": 5,
        "annotators_per_item": 1,
        "annotators": [a.username for a in annotators],
        **extra,
    }


def _counts() -> tuple[int, int]:
    return Study.objects.count(), StudyItem.objects.count()


def test_a_study_from_a_filter_holds_a_seeded_sample_of_exactly_what_the_filter_matches(
    pool, annotators, curator_client: APIClient
):
    matched = set(Candidate.objects.filter(risk_category=RISK).values_list("pk", flat=True))
    assert len(matched) == 13
    body = _body(annotators, drawn_from="filter", filter={"risk_category": RISK}, per_group=5)
    created = curator_client.post("/api/annotation/studies/", body, format="json")
    assert created.status_code == 201, created.content
    study = Study.objects.get(pk=created.json()["id"])
    items = list(study.items.all())
    assert len(items) == 5 and {i.candidate_id for i in items} <= matched
    assert {i.group for i in items} == {"selected"}
    assert {i.stratum for i in items} == {f"filter: risk category = {RISK}"}
    assert (study.drawn_from, study.drawn_filter, study.stratify_by) == ("filter", {"risk_category": RISK}, "")
    assert created.json()["drawn_from"] == "filter"
    assert created.json()["strata"] == [
        {
            "group": "selected",
            "name": f"filter: risk category = {RISK}",
            "pool": 13,
            "quota": 5.0,
            "allocated": 5,
            "realised": 5,
        }
    ]
    # The whole filter, when n is its size; the same seed, the same sample.
    whole = curator_client.post(
        "/api/annotation/studies/", {**body, "name": "Whole", "per_group": 13}, format="json"
    ).json()
    assert set(StudyItem.objects.filter(study_id=whole["id"]).values_list("candidate_id", flat=True)) == matched
    again = curator_client.post("/api/annotation/studies/", {**body, "name": "Again"}, format="json").json()
    assert set(StudyItem.objects.filter(study_id=again["id"]).values_list("candidate_id", flat=True)) == {
        i.candidate_id for i in items
    }


def test_a_study_of_chosen_candidates_holds_exactly_those(pool, annotators, curator_client: APIClient):
    chosen = list(Candidate.objects.order_by("-rank").values_list("external_id", flat=True)[:3]) + [
        Candidate.objects.get(rank=1).external_id
    ]
    created = curator_client.post(
        "/api/annotation/studies/", _body(annotators, drawn_from="chosen", candidates=chosen), format="json"
    )
    assert created.status_code == 201, created.content
    study = Study.objects.get(pk=created.json()["id"])
    assert sorted(study.items.values_list("candidate__external_id", flat=True)) == sorted(chosen)
    assert study.per_group == 4 and study.drawn_from == "chosen"
    assert set(study.items.values_list("group", "stratum")) == {("selected", "chosen candidates")}


def test_a_selected_study_predicts_nothing_from_q(pool, annotators, make_study, curator_client: APIClient):
    ids = list(Candidate.objects.filter(rank__lte=3).values_list("external_id", flat=True))
    created = curator_client.post(
        "/api/annotation/studies/", _body(annotators, drawn_from="chosen", candidates=ids), format="json"
    )
    study = Study.objects.get(pk=created.json()["id"])
    assert label_all(study, annotators[0], lambda number: (True, True, True)) == 3
    results = study_results(study)
    # Three decided items, none of them predicted valid or invalid: no confusion-matrix cell counts them.
    assert results.undecided == 0 and results.prediction.n == 0


REFUSALS = [
    ({"drawn_from": "chosen", "candidates": []}, "candidates", "choose at least one"),
    ({"drawn_from": "chosen"}, "candidates", "choose at least one"),
    (
        {"drawn_from": "chosen", "candidates": ["pool-000/target-agent-zeta/proposer-omega", "no-such"]},
        "candidates",
        "'no-such'",
    ),
    ({"drawn_from": "chosen", "candidates": ["x"] * (MAX_CHOSEN + 1)}, "candidates", str(MAX_CHOSEN)),
    ({"drawn_from": "chosen", "candidates": ["unjudged"]}, "candidates", "not ranked"),
    ({"drawn_from": "chosen", "filter": {"q": "pool"}, "candidates": ["unjudged"]}, "filter", "drawn_from 'filter'"),
    ({"drawn_from": "filter", "filter": {"risk_category": "no such risk"}}, "filter", "matches no ranked candidate"),
    ({"drawn_from": "filter", "filter": {"group": "middle"}}, "filter.group", "must be one of"),
    ({"drawn_from": "filter", "filter": {"k": "many"}}, "filter.k", "whole number"),
    ({"drawn_from": "filter", "filter": {"colour": "red"}}, "filter.colour", "not a parameter"),
    ({"drawn_from": "filter", "filter": {"risk_category": RISK}, "per_group": 14}, "per_group", "the 13 ranked"),
    ({"drawn_from": "filter", "filter": {"q": "pool"}, "candidates": ["a"]}, "candidates", "drawn_from 'chosen'"),
    ({"drawn_from": "everything"}, "drawn_from", "not a valid choice"),
]


@pytest.mark.parametrize(("extra", "field", "says"), REFUSALS)
def test_a_refused_selection_is_a_400_naming_the_field_and_changes_nothing(
    pool, annotators, curator_client: APIClient, extra, field, says
):
    unjudged = with_judges(CandidateLineFactory(id="unjudged", task_index=50))
    candidate_import_streams([("unjudged.jsonl", jsonl(unjudged).splitlines())])
    before = _counts()
    refused = curator_client.post("/api/annotation/studies/", _body(annotators, **extra), format="json")
    assert refused.status_code == 400, refused.content
    errors = refused.json()["errors"]
    assert [e["field"] for e in errors] == [field], errors
    assert says in errors[0]["message"]
    assert _counts() == before


def _ranking_ids(html: str) -> list[str]:
    return re.findall(r'name="candidates" value="([^"]+)"', html)


def _study_form(page: str, annotators: list) -> dict[str, Any]:
    """What the new-study page's form would send, as its fields are filled in."""
    form: dict[str, Any] = {"name": "From the ranking", "per_group": "25", "annotators_per_item": "1"}
    form["top_k"] = re.search(r'name="top_k" value="(\d+)"', page).group(1)
    form["seed"] = re.search(r'name="seed" value="(\d+)"', page).group(1)
    form["claim_timeout_minutes"] = "30"
    form["stratify_by"] = "perturbation"
    form["routing"] = "fixed"
    form["gold_rate"] = "0"
    drawn = re.search(r'<option value="(\w+)" selected>', page.split('name="drawn_from"')[1])
    form["drawn_from"] = drawn.group(1) if drawn else ""
    found = re.search(r'name="ranking_filter" value="([^"]*)"', page)
    form["ranking_filter"] = found.group(1).replace("&amp;", "&") if found else ""
    chosen = re.search(r'name="candidates"[^>]*>\n?([^<]*)</textarea>', page)
    form["candidates"] = chosen.group(1) if chosen else ""
    form["annotators"] = [str(a.pk) for a in annotators]
    return form


def test_ticked_rows_of_the_ranking_page_become_a_study(pool, annotators, curator, client: Client):
    client.force_login(curator)
    ranking = client.get("/candidates/", {"risk_category": RISK}).content.decode()
    assert "New study from the ticked rows" in ranking
    ticked = _ranking_ids(ranking)[:3]
    page = client.get("/annotation/studies/new/", {"drawn_from": "chosen", "candidates": ticked})
    assert page.status_code == 200
    form = _study_form(page.content.decode(), annotators)
    assert form["drawn_from"] == "chosen" and form["candidates"].split() == ticked
    created = client.post("/annotation/studies/new/", form)
    assert created.status_code == 302, created.content.decode()[:2000]
    study = Study.objects.get(name="From the ranking")
    assert sorted(study.items.values_list("candidate__external_id", flat=True)) == sorted(ticked)
    detail = client.get(created.url).content.decode()
    assert "<b>3</b> chosen candidates" in detail and "One stratum: the chosen candidates" in detail


def test_the_filter_of_the_ranking_page_becomes_a_study(pool, annotators, curator, client: Client):
    client.force_login(curator)
    ranking = client.get("/candidates/", {"risk_category": RISK, "sort": "-id"}).content.decode()
    link = re.search(r'<a class="button" href="([^"]+)">New study from this filter</a>', ranking).group(1)
    assert link == f"/annotation/studies/new/?drawn_from=filter&amp;risk_category={RISK}"
    page = client.get(link.replace("&amp;", "&")).content.decode()
    form = _study_form(page, annotators) | {"per_group": "4"}
    assert form["ranking_filter"] == f"risk_category={RISK}"
    created = client.post("/annotation/studies/new/", form)
    assert created.status_code == 302, created.content.decode()[:2000]
    study = Study.objects.get(name="From the ranking")
    assert set(study.items.values_list("candidate__risk_category", flat=True)) == {RISK}
    assert study.items.count() == 4
    detail = client.get(created.url).content.decode()
    assert f'drawn from the ranking\'s filter <span class="mono">risk_category={RISK}</span>' in detail


def test_the_page_refuses_a_selection_on_its_field_and_creates_nothing(pool, annotators, curator, client: Client):
    client.force_login(curator)
    page = client.get("/annotation/studies/new/", {"drawn_from": "chosen", "candidates": ["no-such-candidate"]})
    form = _study_form(page.content.decode(), annotators)
    before = _counts()
    refused = client.post("/annotation/studies/new/", form)
    assert refused.status_code == 400
    assert "no candidate with the id &#x27;no-such-candidate&#x27;" in refused.content.decode()
    bad_filter = client.post(
        "/annotation/studies/new/", form | {"drawn_from": "filter", "candidates": "", "ranking_filter": "group=middle"}
    )
    assert bad_filter.status_code == 400 and "group: must be one of" in bad_filter.content.decode()
    assert _counts() == before


def test_only_study_managers_are_offered_a_study_from_the_ranking(pool, client: Client):
    client.force_login(make_user("reader", VIEWER))
    ranking = client.get("/candidates/").content.decode()
    assert "New study from" not in ranking and 'name="candidates"' not in ranking
    assert client.get("/annotation/studies/new/", {"drawn_from": "chosen"}).status_code == 403
