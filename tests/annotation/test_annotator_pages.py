"""The annotator's pages without a browser: landing, labelling, revising, closed studies; and roles."""

import pytest

from annotation.models import Assignment
from annotation.studies import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(pool, annotators, make_study):
    return make_study(annotators, name="Pilot study")


def token_of(response) -> str:
    return response.redirect_chain[-1][0].rstrip("/").split("/")[-1]


def test_landing_start_label_and_move_on(study, annotators, client):
    client.force_login(annotators[0])
    landing = client.get("/annotation/").content.decode()
    assert "Pilot study" in landing and "0</b> done / 8 assigned" in landing and "Start" in landing

    first = client.post(f"/annotation/s/{study.pk}/next/", follow=True)
    assert first.status_code == 200 and "/i/" in first.redirect_chain[-1][0]
    response = client.post(
        first.redirect_chain[-1][0],
        {"c1": "yes", "c2": "yes", "c3": "no", "comment": " odd test ", "seconds_spent": "12.5"},
        follow=True,
    )
    label = Assignment.objects.get(item__token=token_of(first), annotator=annotators[0])
    assert (label.c1, label.c2, label.c3, label.valid, label.comment, label.seconds_spent) == (
        True,
        True,
        False,
        False,
        "odd test",
        12.5,
    )
    assert token_of(response) != token_of(first)
    assert "Saved your answers" in response.content.decode()
    assert "1</b> done / 8 assigned" in response.content.decode()


def test_a_missing_answer_is_named_and_nothing_is_saved(study, annotators, client):
    client.force_login(annotators[0])
    first = client.post(f"/annotation/s/{study.pk}/next/", follow=True)
    response = client.post(first.redirect_chain[-1][0], {"c1": "yes", "c3": "no"})
    assert response.status_code == 400
    assert "This field is required" in response.content.decode()
    assert not Assignment.objects.filter(submitted_at__isnull=False).exists()


def test_revising_from_the_list_and_finishing(study, annotators, client):
    client.force_login(annotators[0])
    for _ in range(8):
        item = client.post(f"/annotation/s/{study.pk}/next/", follow=True)
        client.post(item.redirect_chain[-1][0], {"c1": "yes", "c2": "yes", "c3": "yes"})
    done = client.post(f"/annotation/s/{study.pk}/next/", follow=True)
    assert done.redirect_chain[-1][0] == f"/annotation/s/{study.pk}/done/"
    assert "Nothing left for you to label" in done.content.decode()

    labels = client.get(f"/annotation/s/{study.pk}/labels/").content.decode()
    assert labels.count("Revise") == 8
    own = Assignment.objects.filter(annotator=annotators[0]).first()
    page = client.get(f"/annotation/s/{study.pk}/i/{own.item.token}/?then=labels").content.decode()
    assert "revises your answers" in page and 'value="yes" checked' in page
    back = client.post(
        f"/annotation/s/{study.pk}/i/{own.item.token}/", {"c1": "no", "c2": "yes", "c3": "yes", "then": "labels"}
    )
    assert back.url == f"/annotation/s/{study.pk}/labels/"
    own.refresh_from_db()
    assert (own.c1, own.revisions) == (False, 1)


def test_a_closed_study_is_read_only(study, annotators, client):
    client.force_login(annotators[0])
    first = client.post(f"/annotation/s/{study.pk}/next/", follow=True)
    url = first.redirect_chain[-1][0]
    client.post(url, {"c1": "yes", "c2": "yes", "c3": "yes"})
    services.study_close(study)
    page = client.get(url).content.decode()
    assert "the study is closed" in page and "disabled" in page
    response = client.post(url, {"c1": "no", "c2": "no", "c3": "no"}, follow=True)
    assert "This study is closed" in response.content.decode()
    assert Assignment.objects.get(item__token=token_of(first)).c1 is True
    assert "Closed" in client.get("/annotation/").content.decode()


def test_the_api_flow_for_annotators(study, annotators, annotator_client):
    client = annotator_client
    # The fixture's annotator is not in the study: its study ids are not found.
    assert client.post(f"/api/annotation/my/studies/{study.pk}/next/").status_code == 404
    client.force_login(annotators[1])
    assert client.get("/api/annotation/my/studies/").json() == [
        {
            "id": study.pk,
            "name": "Pilot study",
            "status": "open",
            "progress": {
                "done": 0,
                "assigned": 8,
                "claimed": False,
                "open_to_you": 8,
                "skipped": 0,
                "flagged": 0,
                "finished": False,
            },
        }
    ]
    data = client.post(f"/api/annotation/my/studies/{study.pk}/next/").json()
    item = data["item"]
    assert data["progress"]["claimed"] is True
    assert item["diff"]["left"] and item["source_instruction"] and item["harm_test"]
    bad = client.put(f"/api/annotation/my/studies/{study.pk}/items/{item['token']}/label/", {"c1": True}, format="json")
    assert bad.status_code == 400 and {e["field"] for e in bad.json()["errors"]} == {"c2", "c3"}
    good = client.put(
        f"/api/annotation/my/studies/{study.pk}/items/{item['token']}/label/",
        {"c1": True, "c2": False, "c3": True, "seconds_spent": 30},
        format="json",
    )
    assert good.status_code == 200 and good.json()["label"]["valid"] is False
    assert good.json()["progress"] == {
        "done": 1,
        "assigned": 8,
        "claimed": False,
        "open_to_you": 7,
        "skipped": 0,
        "flagged": 0,
        "finished": False,
    }
    mine = client.get(f"/api/annotation/my/studies/{study.pk}/labels/").json()
    assert [(m["item"], m["valid"]) for m in mine] == [(item["number"], False)]
    services.study_close(study)
    closed = client.put(
        f"/api/annotation/my/studies/{study.pk}/items/{item['token']}/label/",
        {"c1": True, "c2": True, "c3": True},
        format="json",
    )
    assert closed.status_code == 409 and "closed" in closed.json()["errors"][0]["message"]


CURATOR_URLS = [
    "/annotation/studies/",
    "/annotation/studies/new/",
    "/annotation/studies/{pk}/",
    "/annotation/studies/{pk}/results/",
    "/annotation/studies/{pk}/disagreement/",
    "/annotation/studies/{pk}/export/labels.csv",
    "/annotation/studies/{pk}/export/items.csv",
    "/annotation/studies/{pk}/export/study.json",
    "/api/annotation/studies/",
    "/api/annotation/studies/{pk}/",
    "/api/annotation/studies/{pk}/items/",
    "/api/annotation/studies/{pk}/results/",
    "/api/annotation/studies/{pk}/export/",
]


@pytest.mark.parametrize("url", CURATOR_URLS)
def test_curator_pages_by_role(study, url, client, annotator_client, curator_client, admin_client_):
    url = url.format(pk=study.pk)
    assert curator_client.get(url).status_code == 200
    assert admin_client_.get(url).status_code == 200
    assert annotator_client.get(url).status_code == 403
    anonymous = client.get(url)
    assert anonymous.status_code in (302, 401, 403)
    if anonymous.status_code == 302:
        assert anonymous.url.startswith("/login/")


def test_curators_do_not_annotate_and_nav_links_follow_roles(study, curator_client, annotator_client):
    assert curator_client.get("/annotation/").status_code == 403
    assert curator_client.post(f"/api/annotation/my/studies/{study.pk}/next/").status_code == 403
    nav = curator_client.get("/annotation/studies/").content.decode()
    assert 'href="/annotation/studies/">Studies</a>' in nav and ">Annotate</a>" not in nav
    nav = annotator_client.get("/annotation/").content.decode()
    assert 'href="/annotation/">Annotate</a>' in nav and ">Studies</a>" not in nav


def test_closing_and_reopening_from_the_study_page(study, curator_client):
    curator_client.post(f"/annotation/studies/{study.pk}/close/")
    study.refresh_from_db()
    assert study.status == "closed"
    assert curator_client.post(f"/api/annotation/studies/{study.pk}/reopen/").json()["status"] == "open"
