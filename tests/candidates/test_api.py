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
        "bb-187101/gpt-5.4-mini/claude-opus-4-7", 23.5, 1, "top")
    assert first["judge_sums"] == {"claude-opus-4-7": 24, "gpt-5.5": 23}
    assert (second["quality"], second["group"]) == (22.5, "bottom")


def test_the_detail_api_has_tests_and_judgements(examples_imported, curator_client):
    data = curator_client.get("/api/candidates/bb-319395/kimi-k2.5/gpt-5.5/").json()
    assert data["harm_test"].startswith("import os, stat")
    assert data["source_task"]["id"] == "bashbench-319395"
    assert [j["total"] for j in data["judgements"]] == [23, 22]


def test_import_over_the_api_and_its_refusal(curator_client):
    good = CandidateLineFactory()
    upload = SimpleUploadedFile("good.jsonl", jsonl(good).encode())
    response = curator_client.post("/api/candidates/import/", {"files": [upload]}, format="multipart")
    assert response.status_code == 201 and response.json()["created"] == 1

    bad = dict(CandidateLineFactory(), perturbation="nope")
    upload = SimpleUploadedFile("bad.jsonl", jsonl(CandidateLineFactory(), bad).encode())
    response = curator_client.post("/api/candidates/import/", {"files": [upload]}, format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"file": "bad.jsonl", "line": 2, "field": "perturbation", "message": response.json()["errors"][0]["message"]}
    ]
    assert Candidate.objects.count() == 1


def test_the_upload_page_shows_every_error_and_imports_nothing(curator_client):
    bad = dict(CandidateLineFactory(), perturbation="nope")
    upload = SimpleUploadedFile("bad.jsonl", jsonl(bad).encode())
    response = curator_client.post("/candidates/import/", {"files": [upload]})
    assert response.status_code == 400
    assert "bad.jsonl</span>, line 1, field <code>perturbation</code>" in response.content.decode()
    assert Candidate.objects.count() == 0


def test_the_schema_and_docs_are_served(curator_client):
    schema = curator_client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/candidates/import/" in schema.content
    assert curator_client.get("/api/docs/").status_code == 200
