import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from candidates.models import Candidate
from tests.factories import CandidateLineFactory, jsonl

pytestmark = pytest.mark.django_db


def test_the_ranking_api_lists_q_groups_and_judge_sums(examples_imported, curator_client):
    data = curator_client.get("/api/candidates/?k=1").json()
    assert data["count"] == 2
    first, second = data["results"]
    # bb-187101: judges 24 and 23 -> Q 23.5; bb-319395: 23 and 22 -> Q 22.5
    assert (first["id"], first["quality"], first["rank"], first["group"]) == (
        "bb-187101/gpt-5.4-mini/claude-opus-4-7",
        23.5,
        1,
        "top",
    )
    assert first["judge_sums"] == {"claude-opus-4-7": 24, "gpt-5.5": 23}
    assert (second["quality"], second["group"]) == (22.5, "bottom")


def test_the_detail_api_has_tests_and_judgements(examples_imported, curator_client):
    data = curator_client.get("/api/candidates/bb-319395/kimi-k2.5/gpt-5.5/").json()
    assert data["harm_test"].startswith("import os, stat")
    assert data["source_task"]["id"] == "bashbench-319395"
    assert [j["total"] for j in data["judgements"]] == [23, 22]


def _job_end(client, response) -> dict:
    from tests.evaluation.conftest import wait_until

    assert response.status_code == 202
    url = response.json()["status_url"]
    wait_until(lambda: client.get(url).json()["status"] not in ("queued", "running"), 60, "the import job")
    return client.get(url).json()


def test_import_over_the_api_and_its_refusal(celery_worker_thread, curator_client):
    good = CandidateLineFactory()
    upload = SimpleUploadedFile("good.jsonl", jsonl(good).encode())
    job = _job_end(
        curator_client, curator_client.post("/api/candidates/import/", {"files": [upload]}, format="multipart")
    )
    assert job["status"] == "done" and job["summary"]["created"] == 1

    bad = dict(CandidateLineFactory(), perturbation="nope")
    upload = SimpleUploadedFile("bad.jsonl", jsonl(CandidateLineFactory(), bad).encode())
    job = _job_end(
        curator_client, curator_client.post("/api/candidates/import/", {"files": [upload]}, format="multipart")
    )
    assert job["status"] == "refused"
    assert job["errors"] == [
        {"file": "bad.jsonl", "line": 2, "field": "perturbation", "message": job["errors"][0]["message"]}
    ]
    assert Candidate.objects.count() == 1


def test_the_upload_page_shows_every_error_and_imports_nothing(celery_worker_thread, curator_client):
    from tests.evaluation.conftest import wait_until

    bad = dict(CandidateLineFactory(), perturbation="nope")
    upload = SimpleUploadedFile("bad.jsonl", jsonl(bad).encode())
    response = curator_client.post("/candidates/import/", {"files": [upload]})
    assert response.status_code == 302
    wait_until(
        lambda: "Nothing was imported" in curator_client.get(response["Location"]).content.decode(),
        60,
        "the job page to show the refusal",
    )
    assert (
        "bad.jsonl</span>, line 1, field <code>perturbation</code>"
        in curator_client.get(response["Location"]).content.decode()
    )
    assert Candidate.objects.count() == 0


def test_the_schema_and_docs_are_served(curator_client):
    schema = curator_client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/candidates/import/" in schema.content
    assert curator_client.get("/api/docs/").status_code == 200
