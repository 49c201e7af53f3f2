"""`?page=` follows one rule on every paged page: a whole number from 1; one past the last shows
the last (a list can shrink between two clicks); anything else is refused with 400 naming `page`,
never silently read as the first page."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from tests.factories import FinishedTrialFactory, RunFactory

pytestmark = pytest.mark.django_db

ROWS = 60  # fifty to a page: two pages on each list
BAD_NUMBERS = ("abc", "0", "-1", "1.5", "٣", "99999999999999")


@pytest.fixture
def paged_run(tmp_path, admin_user):
    """60 candidates, 61 runs, and a run of 60 trials."""
    from candidates.models import Candidate
    from candidates.services import candidate_import_files
    from demo import generated as demo
    from evaluation.models import Trial
    from evaluation.runs.agents import reference_agents_ensure

    path = tmp_path / "synthetic.jsonl"
    demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), ROWS), path)
    candidate_import_files([str(path)])
    agent = reference_agents_ensure()[0]
    RunFactory.create_batch(ROWS, created_by=admin_user)
    run = RunFactory(name="paged", created_by=admin_user, agents=[agent])
    Trial.objects.bulk_create(
        FinishedTrialFactory.build(
            run=run, candidate_id=pk, agent=agent, repetition=1, candidate_revision=1, started_at=timezone.now()
        )
        for pk in Candidate.objects.values_list("pk", flat=True)
    )
    return run


def _lists(run) -> dict[str, str]:
    return {
        "ranking": "/candidates/",
        "review queue": "/candidates/review/?k=60",
        "runs": "/evaluation/",
        "run": f"/evaluation/runs/{run.pk}/",
    }


def _shown_page(html: str) -> tuple[int, int]:
    number, pages = re.search(r"Page (\d+) of (\d+)", html).groups()
    return int(number), int(pages)


@pytest.mark.parametrize(
    "value, message",
    [
        *((value, "<b>page</b>: must be a whole number from 1 to 2147483647") for value in BAD_NUMBERS),
        ("2\x00", "page: the query parameter contains a NUL character"),
    ],
)
def test_a_page_that_is_not_a_page_number_is_refused_naming_it(paged_run, admin_client_, value, message):
    for name, url in _lists(paged_run).items():
        refused = admin_client_.get(url, {"page": value})
        assert refused.status_code == 400, name
        text = refused.content.decode()
        assert message in text, name
        assert "Page 1 of" not in text, name  # nothing of the list itself


def test_the_pages_walk_their_lists_and_past_the_last_is_the_last(paged_run, admin_client_):
    for name, url in _lists(paged_run).items():
        first = admin_client_.get(url).content.decode()
        assert _shown_page(first) == (1, 2), name
        separator = "&" if "?" in url else "?"
        second = admin_client_.get(f"{url}{separator}page=2").content.decode()
        assert _shown_page(second) == (2, 2), name
        assert second != first
        assert _shown_page(admin_client_.get(f"{url}{separator}page=40").content.decode()) == (2, 2), name
        # the links carry the list's other parameters once and the page number once
        for link in re.findall(r'href="\?([^"]*)"', second):
            assert link.count("page=") <= 1, (name, link)


def test_a_run_page_refuses_a_status_it_does_not_know(paged_run, admin_client_):
    url = f"/evaluation/runs/{paged_run.pk}/"
    refused = admin_client_.get(url, {"status": "finished-ish"})
    assert refused.status_code == 400
    assert "<b>status</b>: must be one of" in refused.content.decode()
    done = admin_client_.get(url, {"status": "done", "page": "2"})
    assert done.status_code == 200 and _shown_page(done.content.decode()) == (2, 2)
    assert "/evaluation/trials/" in done.content.decode()
    queued = admin_client_.get(url, {"status": "queued"})
    assert queued.status_code == 200 and "/evaluation/trials/" not in queued.content.decode()


def test_a_user_without_the_role_learns_nothing_from_a_bad_page(paged_run, annotator_client):
    for url in _lists(paged_run).values():
        assert annotator_client.get(url, {"page": "abc"}).status_code == 403


def test_the_run_api_refuses_a_status_it_does_not_know_as_the_page_does(paged_run, admin_client_):
    url = f"/api/evaluation/runs/{paged_run.pk}/trials/"
    refused = admin_client_.get(url, {"status": "finished-ish"})
    assert refused.status_code == 400
    [error] = refused.json()["errors"]
    assert error["field"] == "status" and error["message"].startswith("must be one of")
    assert admin_client_.get(url, {"status": "done"}).json()["count"] == ROWS
    assert admin_client_.get(url, {"status": "queued"}).json()["count"] == 0


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_the_api_lists_refuse_a_page_that_is_not_a_page_number(paged_run, admin_client_, value):
    for url in ("/api/candidates/", f"/api/evaluation/runs/{paged_run.pk}/trials/"):
        refused = admin_client_.get(url, {"page": value})
        assert refused.status_code == 400, url
        [error] = refused.json()["errors"]
        assert error["field"] == "page" and error["message"].startswith("must be a whole number from 1"), url


def test_the_api_lists_walk_their_pages(paged_run, admin_client_):
    url = "/api/candidates/"
    first = admin_client_.get(url).json()
    assert first["count"] == ROWS and len(first["results"]) == 50
    second = admin_client_.get(url, {"page": "2"}).json()
    assert len(second["results"]) == ROWS - 50 and second["next"] is None
    assert admin_client_.get(url, {"page": "last"}).json()["results"] == second["results"]
    assert admin_client_.get(url, {"page": "3"}).status_code == 404  # past the end: clients follow `next`


def test_the_release_and_study_lists_are_paged_as_every_api_list(admin_user, admin_client_):
    from annotation.models import Study
    from candidates.models import Release
    from tests.factories import StudyFactory

    Release.objects.bulk_create(Release(name="bench", version=f"1.{n}", created_by=admin_user) for n in range(51))
    Study.objects.bulk_create(StudyFactory.build(created_by=admin_user) for _ in range(51))
    for url in ("/api/releases/", "/api/annotation/studies/"):
        first = admin_client_.get(url).json()
        assert (first["count"], len(first["results"]), first["previous"]) == (51, 50, None), url
        second = admin_client_.get(first["next"]).json()
        assert len(second["results"]) == 1 and second["next"] is None, url
        ids = [row["id"] for row in first["results"] + second["results"]]
        assert len(set(ids)) == 51, url  # every row once, in a stable order
        refused = admin_client_.get(url, {"page": "abc"})
        assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "page", url
