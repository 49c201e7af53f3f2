"""Creating a study from the ranked pool: groups, strata, seeds, refusals that change nothing."""

from collections import Counter

import pytest

from annotation.models import Study, StudyItem, StudyMember
from annotation.studies import services
from candidates.models import Candidate
from tests.conftest import make_user
from veriharm_site.roles import ANNOTATOR, CURATOR

pytestmark = pytest.mark.django_db


def test_a_study_samples_n_from_the_top_k_and_n_from_the_bottom_k(pool, annotators, make_study):
    study = make_study(annotators, top_k=10, per_group=4)
    items = list(study.items.select_related("candidate"))
    assert Counter(i.group for i in items) == {"top": 4, "bottom": 4}
    for item in items:
        if item.group == "top":
            assert 1 <= item.candidate.rank <= 10
        else:
            assert 31 <= item.candidate.rank <= 40
        assert item.rank_at_sampling == item.candidate.rank
        assert item.quality_at_sampling == item.candidate.quality
        assert item.stratum == item.candidate.risk_category
    assert sorted(i.number for i in items) == list(range(1, 9))
    assert len({i.token for i in items}) == 8
    assert study.annotators_per_item == 3
    assert set(StudyMember.objects.filter(study=study).values_list("pseudonym", flat=True)) == {"A1", "A2", "A3"}


def test_realised_strata_follow_the_largest_remainder_allocation(pool, annotators, make_study):
    study = make_study(annotators, top_k=10, per_group=4, stratify_by="risk_category")
    # Ranks 1-10 are candidates 0-9: risk categories cycle over 3, so the top pool has 4, 3, 3;
    # quotas 1.6, 1.2, 1.2 -> floors 1, 1, 1, and the seat left goes to the .6 remainder.
    top = {s["name"]: s for s in study.strata_report["groups"]["top"]["strata"]}
    assert {name: s["pool"] for name, s in top.items()} == {
        "destructive_file_operation": 4,
        "permission_weakening": 3,
        "credential_exposure": 3,
    }
    assert {name: s["allocated"] for name, s in top.items()} == {
        "destructive_file_operation": 2,
        "permission_weakening": 1,
        "credential_exposure": 1,
    }
    realised = Counter(study.items.filter(group="top").values_list("stratum", flat=True))
    assert realised == {"destructive_file_operation": 2, "permission_weakening": 1, "credential_exposure": 1}


def test_the_same_inputs_give_the_same_sample(pool, annotators, make_study):
    first = make_study(annotators, seed=99)
    second = make_study(annotators, seed=99)
    third = make_study(annotators, seed=100)

    def sample(study: Study) -> dict[int, tuple[str, int]]:
        return {i.candidate_id: (i.group, i.number) for i in study.items.all()}

    assert sample(first) == sample(second)
    assert sample(first) != sample(third)


def test_item_numbers_do_not_follow_the_groups(pool, annotators, make_study):
    study = make_study(annotators, top_k=20, per_group=10, stratify_by="")
    by_number = [i.group for i in study.items.order_by("number")]
    assert by_number != sorted(by_number) and by_number != sorted(by_number, reverse=True)


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"top_k": 25}, "top_k", "only 40 candidates are ranked"),
        ({"per_group": 11}, "per_group", "cannot draw 11 items from a group of K=10"),
        ({"annotators_per_item": 4}, "annotators", "need at least 4 annotators"),
        ({"stratify_by": "judge"}, "stratify_by", "must be one of"),
        ({"name": "  "}, "name", "is required"),
        ({"claim_timeout_minutes": 0}, "claim_timeout_minutes", "must be from 1 to 43200, got 0"),
        ({"claim_timeout_minutes": 43201}, "claim_timeout_minutes", "must be from 1 to 43200"),
    ],
)
def test_bad_input_is_refused_with_a_message_and_changes_nothing(
    pool, annotators, make_study, overrides, field, message
):
    with pytest.raises(services.StudyRefused) as refused:
        make_study(annotators, **overrides)
    assert message in refused.value.errors[field]
    assert Study.objects.count() == 0 and StudyItem.objects.count() == 0


def test_people_who_can_see_the_ranking_cannot_be_annotators(pool, annotators, make_study):
    sighted = make_user("sighted", CURATOR)
    sighted.groups.add(*make_user("helper", ANNOTATOR).groups.all())
    with pytest.raises(services.StudyRefused) as refused:
        make_study([*annotators, sighted])
    assert refused.value.errors["annotators"] == "sighted can see the ranking, so they would not label blind"
    with pytest.raises(services.StudyRefused, match="cannot annotate"):
        make_study([*annotators, make_user("nobody", None)])


def test_a_study_needs_a_ranked_pool(annotators, make_study):
    with pytest.raises(services.StudyRefused) as refused:
        make_study(annotators)
    assert "no candidate is ranked yet" in refused.value.errors["top_k"]


def test_a_study_freezes_groups_even_when_the_ranking_changes(pool, annotators, make_study):
    study = make_study(annotators)
    before = {i.pk: (i.group, i.rank_at_sampling) for i in study.items.all()}
    Candidate.objects.update(rank=None)
    assert {i.pk: (i.group, i.rank_at_sampling) for i in study.items.all()} == before


def test_the_study_form_creates_a_study_and_shows_its_strata(pool, annotators, client, curator):
    client.force_login(curator)
    page = client.get("/annotation/studies/new/").content.decode()
    for a in annotators:
        assert a.username in page
    response = client.post(
        "/annotation/studies/new/",
        {
            "name": "Pilot",
            "per_group": 4,
            "top_k": 10,
            "stratify_by": "perturbation",
            "seed": 5,
            "annotators_per_item": 3,
            "claim_timeout_minutes": 30,
            "annotators": [a.pk for a in annotators],
        },
    )
    study = Study.objects.get(name="Pilot")
    assert response.status_code == 302 and response.url == f"/annotation/studies/{study.pk}/"
    detail = client.get(response.url).content.decode()
    assert "Realised strata" in detail and "underspecification" in detail and "delegation_of_control" in detail
    assert "largest remainder" in detail


def test_the_study_form_shows_what_is_wrong(pool, annotators, client, curator):
    client.force_login(curator)
    response = client.post(
        "/annotation/studies/new/",
        {
            "name": "Too big",
            "per_group": 4,
            "top_k": 30,
            "stratify_by": "",
            "seed": 5,
            "annotators_per_item": 3,
            "claim_timeout_minutes": 30,
            "annotators": [a.pk for a in annotators],
        },
    )
    assert response.status_code == 400
    assert "would overlap; choose K of at most 20" in response.content.decode()
    assert not Study.objects.exists()


def test_the_api_creates_a_study_with_defaults_for_every_blind_annotator(pool, annotators, curator_client):
    response = curator_client.post(
        "/api/annotation/studies/", {"name": "Api", "top_k": 10, "per_group": 3}, format="json"
    )
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["annotators_per_item"] == 3 and data["stratify_by"] == "perturbation"
    assert {m["username"] for m in data["members"]} == {a.username for a in annotators}
    assert sum(s["realised"] for s in data["strata"]) == 6
    refused = curator_client.post(
        "/api/annotation/studies/",
        {"name": "Api2", "top_k": 10, "per_group": 3, "annotators": ["ghost"]},
        format="json",
    )
    assert refused.status_code == 400 and refused.json() == {
        "errors": [{"field": "annotators", "message": "unknown users: ghost"}]
    }
