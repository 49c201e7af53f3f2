"""The pipeline format's JSON Schema served by the API, to the roles that may read it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from candidates.pipeline.schema import pipeline_schema
from tests.conftest import PASSWORD
from tests.unit.candidates.test_pipeline_schema_rules import COMMITTED

URL = "/api/pipeline-format/schema/"


def _user_with(db, *codenames: str) -> APIClient:
    user = get_user_model().objects.create_user(username="-".join(codenames) or "nobody", password=PASSWORD)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="candidates", codename__in=codenames))
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("codenames", [("import_pipeline",), ("view_ranking",)])
def test_the_api_serves_the_schema_to_importers_and_ranking_readers(db, codenames):
    response = _user_with(db, *codenames).get(URL)
    assert response.status_code == 200 and response["Content-Type"].startswith("application/schema+json")
    assert response.json() == COMMITTED == pipeline_schema()


def test_the_schema_is_refused_to_annotators_users_without_permission_and_anonymous(db, annotator_client):
    assert annotator_client.get(URL).status_code == 403
    assert _user_with(db).get(URL).status_code == 403
    assert APIClient().get(URL).status_code in (401, 403)


def test_the_schema_endpoint_is_in_the_api_description(curator_client):
    description = curator_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "get" in description["paths"][URL]
