"""Roles on every page and endpoint of the candidates app; refused actions change nothing."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from candidates.models import Candidate, ImportJob
from tests.factories import CandidateLineFactory, jsonl

pytestmark = pytest.mark.django_db

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"
READ_URLS = [
    "/candidates/",
    f"/candidates/c/{CANDIDATE}/",
    "/candidates/export.jsonl",
    "/api/candidates/",
    f"/api/candidates/{CANDIDATE}/",
    "/api/candidates/export/",
]


@pytest.mark.parametrize("url", READ_URLS)
def test_an_annotator_cannot_see_the_ranking_scores_or_exports(examples_imported, annotator_client, url):
    response = annotator_client.get(url)
    assert response.status_code == 403
    # The log-out form's CSRF token is random and may hold any digits: everything else must not show Q (23).
    shown = re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", response.content)
    assert b"claude-opus-4-7" not in shown and b"23" not in shown


@pytest.mark.parametrize("url", READ_URLS)
def test_anonymous_users_are_sent_to_log_in(examples_imported, client, url):
    response = client.get(url)
    assert response.status_code in (302, 401, 403)
    if response.status_code == 302:
        assert response.url.startswith("/login/")


@pytest.mark.parametrize("url", READ_URLS)
def test_curators_and_admins_can_read(examples_imported, curator_client, admin_client_, url):
    assert curator_client.get(url).status_code == 200
    assert admin_client_.get(url).status_code == 200


def test_an_annotator_cannot_import(examples_imported, annotator_client):
    before = Candidate.objects.count()
    upload = SimpleUploadedFile("x.jsonl", jsonl(CandidateLineFactory()).encode())
    assert annotator_client.post("/api/candidates/import/", {"files": [upload]}, format="multipart").status_code == 403
    upload.seek(0)
    assert annotator_client.post("/candidates/import/", {"files": [upload]}).status_code == 403
    assert Candidate.objects.count() == before and not ImportJob.objects.exists()


def test_the_django_admin_is_for_admins_only(examples_imported, curator_client, admin_client_):
    assert curator_client.get("/admin/candidates/candidate/").status_code == 302
    assert admin_client_.get("/admin/candidates/candidate/").status_code == 200
