"""Schemathesis (property-based, from the OpenAPI schema drf-spectacular generates) against a live
server on loopback, for every operation, as anonymous, annotator, curator and admin, on a seeded
database: no server error and no answer that breaks the schema, whatever the generated input.

Each generated case is sent as generated (random ids: mostly 404s) and again with the ids of real
seeded objects in its path, so the bodies and queries reach the code behind the lookups. The number
of examples per operation is bounded (VERIHARM_SCHEMATHESIS_EXAMPLES, default 6) so the whole module
runs in a few minutes on two cores."""

from __future__ import annotations

import base64
import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from candidates.curation.review import decision_record
from candidates.models import Candidate
from candidates.releases.services import release_create, release_freeze

from .payloads import api_schema, fill_path
from .seed import USERS, Seeded, seed, table_counts
from .uploads import hostile_uploads, release_bases

EXAMPLES = int(os.environ.get("VERIHARM_SCHEMATHESIS_EXAMPLES", "6"))
ROLES = ["anonymous", *USERS]
STATS = {"operations": 0, "cases": 0, "requests": 0, "failures": 0}

# The examples and fuzzing phases, bounded by max_examples; the coverage phase (which enumerates
# boundary values of every parameter, unbounded by max_examples) is left out to keep the run short:
# tests/hostile/test_schema_walk.py sends those boundary values itself.
schema = schemathesis.openapi.from_dict(
    api_schema(), config=schemathesis.Config.from_dict({"phases": {"coverage": {"enabled": False}}})
)


@pytest.fixture
def seeded(transactional_db, live_server) -> Seeded:
    from tests.conftest import PASSWORD

    data = seed()
    data.headers = {  # type: ignore[attr-defined]
        role: {"Authorization": "Basic " + base64.b64encode(f"{USERS[role][0]}:{PASSWORD}".encode()).decode()}
        for role in USERS
    } | {"anonymous": {}}
    data.base_url = live_server.url  # type: ignore[attr-defined]
    STATS["operations"] += 1
    return data


def _real_ids(case, seeded: Seeded) -> dict:
    template = case.operation.path
    real = fill_path(template, seeded)
    names = [part[1:-1] for part in template.split("/") if part.startswith("{")]
    values = [v for t, v in zip(template.split("/"), real.split("/")) if t.startswith("{")]
    return dict(zip(names, values))


@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
def test_api(case, seeded):
    STATS["cases"] += 1
    variants = [dict(case.path_parameters or {})]
    if case.path_parameters:
        variants.append(_real_ids(case, seeded))
    for path_parameters in variants:
        case.path_parameters = path_parameters
        for role in ROLES:
            STATS["requests"] += 1
            try:
                case.call_and_validate(
                    base_url=seeded.base_url,
                    headers=seeded.headers[role],
                    checks=[not_a_server_error, response_schema_conformance],
                )
            except Exception:
                STATS["failures"] += 1
                raise


def test_hostile_uploads(seeded):
    """The upload operations, whose files the generated cases fill with random bytes, sent as
    Schemathesis cases with files built from valid ones of a frozen release and spoiled one field
    each (uploads.py): no server error, an answer the schema describes, a 4xx naming what is
    spoiled, and no row changed. As the admin, who may use both."""
    curator = seeded.users["curator"]
    candidate = Candidate.objects.get(external_id=seeded.candidate)
    decision_record(candidate_id=candidate.pk, user=curator, verdict="approve", reason="valid", acknowledge_flags=True)
    release = release_freeze(release_create(user=curator, name="hostile-uploads", version="1.0").pk, user=curator)
    before = table_counts()
    problems = []
    for upload in hostile_uploads(release_bases(release)):
        case = schema[upload.path]["POST"].Case(
            body={**upload.data, upload.field: upload.content()}, media_type="multipart/form-data"
        )
        # The parts as Schemathesis serializes them, the file under its own name (the importers read
        # a log's format from its suffix; Schemathesis names a part by the bytes it guesses).
        parts = case.as_transport_kwargs(base_url=seeded.base_url)["files"]
        files = [(name, (upload.file_name, *part[1:]) if name == upload.field else part) for name, part in parts]
        STATS["requests"] += 1
        response = case.call_and_validate(
            base_url=seeded.base_url,
            headers=seeded.headers["admin"],
            checks=[not_a_server_error, response_schema_conformance],
            files=files,
        )
        messages = [e["message"] for e in response.json()["errors"]] if response.status_code == 400 else []
        if not any(upload.names in message for message in messages):
            problems.append(f"{upload.what} -> {response.status_code}: {messages[:3]}")
    assert problems == [], "\n".join(problems)
    assert table_counts() == before
