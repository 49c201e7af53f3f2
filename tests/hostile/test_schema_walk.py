"""Every operation of the OpenAPI schema, for every role and anonymous, with hostile input: never a
500, every refusal in the one error shape with a message, and no table changes when refused."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from rest_framework.test import APIClient

from candidates.curation.review import decision_record
from candidates.models import Candidate
from candidates.releases.services import release_create, release_freeze

from .payloads import LABEL_OPERATIONS, api_schema, hostile_requests, upload_operations
from .seed import Seeded, seed, table_counts
from .uploads import hostile_uploads, release_bases

# Upload operations whose hostile files another module sends: the candidate import's are pipeline
# files, with their own limits (test_limits.py).
UPLOADS_ELSEWHERE = {("POST", "/api/candidates/import/")}
# Who may use each upload operation: their hostile files must be refused for what they spoil.
UPLOAD_ROLES = {"/api/evaluation/runs/import/": {"admin"}, "/api/releases/import/": {"curator", "admin"}}

ROLES = ["anonymous", "annotator", "viewer", "curator", "admin"]


@pytest.mark.parametrize("role", ROLES)
def test_no_hostile_request_answers_500_or_changes_anything_when_refused(db, role):
    seeded = seed()
    client = APIClient(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(seeded.users[role])
    schema = api_schema()
    problems: list[str] = []
    sent = 0
    # Each request runs in a transaction rolled back afterwards: what one accepts (a close, a freeze, a
    # delete) does not change what the next one meets, so each starts from these counts.
    before = table_counts()
    forbidden: set[tuple[str, str]] = set()
    for request in hostile_requests(schema, seeded, thorough=role != "anonymous", forbidden=forbidden):
        kwargs = (
            {"data": request.body.encode("utf-8", "surrogatepass"), "content_type": "application/json"}
            if request.body is not None
            else {}
        )
        with transaction.atomic():
            response = client.generic(request.method, request.path, QUERY_STRING=_query(request.query), **kwargs)
            after = table_counts() if response.status_code >= 400 else before
            transaction.set_rollback(True)
        sent += 1
        if request.probe and response.status_code == 403:
            # The role may not use the operation at all: its body's fields are never read, and the
            # roles that may use it walk them (the whole-body spoils above still go to every role).
            forbidden.add((request.method, request.template))
        labels = request.template in LABEL_OPERATIONS
        if request.valid and ((role == "admin" and not labels) or (role == "annotator" and labels)):
            # The unspoiled body is accepted, so each spoiled one is refused for the field it spoils.
            if response.status_code >= 300:
                problems.append(f"valid body refused: {request.method} {request.path} -> {response.content[:300]!r}")
        where = f"{request.method} {request.path[:80]} [{request.what}] -> {response.status_code}"
        if response.status_code >= 500:
            problems.append(where)
            continue
        if response.status_code >= 400:
            body = response.json() if response.get("Content-Type") == "application/json" else {}
            if not (
                isinstance(body.get("errors"), list)
                and body["errors"]
                and all(isinstance(e.get("message"), str) and e["message"] and "field" in e for e in body["errors"])
            ):
                problems.append(f"{where}: not the error shape: {str(body)[:200]}")
            if after != before:
                problems.append(f"{where}: refused but rows changed")
        elif request.must_refuse:
            problems.append(f"{where}: accepted")
    assert sent > 400
    assert table_counts() == before, "a request's rows outlived its rolled-back transaction"
    with transaction.atomic():
        problems += _hostile_uploads(client, role, seeded, schema)
        transaction.set_rollback(True)
    assert table_counts() == before
    assert problems == [], "\n".join(problems)


def _hostile_uploads(client: APIClient, role: str, seeded: Seeded, schema: dict) -> list[str]:
    """Every upload operation with files spoiled one field each (uploads.py), built from valid ones
    of a frozen release, so that what is spoiled would reach the database: a 4xx in the error shape,
    for the roles that may upload naming what is spoiled, and no row changed. A role that may not
    upload is sent one file per operation (its 403 comes before the file is read)."""
    problems: list[str] = []
    walked = {("POST", path) for path in UPLOAD_ROLES}
    if upload_operations(schema) - UPLOADS_ELSEWHERE != walked:
        problems.append(f"upload operations without hostile files: {upload_operations(schema) - walked}")
    curator = seeded.users["curator"]
    candidate = Candidate.objects.get(external_id=seeded.candidate)
    decision_record(candidate_id=candidate.pk, user=curator, verdict="approve", reason="valid", acknowledge_flags=True)
    release = release_freeze(release_create(user=curator, name="hostile-uploads", version="1.0").pk, user=curator)
    before = table_counts()
    sent: set[str] = set()
    for upload in hostile_uploads(release_bases(release)):
        allowed = role in UPLOAD_ROLES[upload.path]
        if not allowed and upload.path in sent:
            continue
        sent.add(upload.path)
        data = {**upload.data, upload.field: SimpleUploadedFile(upload.file_name, upload.content())}
        response = client.post(upload.path, data, format="multipart")
        where = f"POST {upload.path} [{upload.what}] -> {response.status_code}"
        body = response.json() if response.get("Content-Type") == "application/json" else {}
        messages = [e.get("message", "") for e in body.get("errors", []) if isinstance(e, dict)]
        if not 400 <= response.status_code < 500 or not messages or not all(messages):
            problems.append(f"{where}: {str(body)[:200]}")
        elif allowed and not any(upload.names in message for message in messages):
            problems.append(f"{where}: does not name {upload.names!r}: {messages[:3]}")
        if table_counts() != before:
            problems.append(f"{where}: refused but rows changed")
            before = table_counts()
    return problems


def _query(params: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return urlencode({k: v.encode("utf-8", "surrogatepass") for k, v in params.items()})
