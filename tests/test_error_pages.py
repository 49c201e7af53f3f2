"""403, 404 and 500 answer with the site's own pages (its layout and a way back), the API with its
error shape; under the demo's local settings too."""

import pytest
from django.test import Client

from tests.test_settings import _run

pytestmark = pytest.mark.django_db


def _styled(body: str, status: int) -> None:
    assert f'data-testid="error-page" data-status="{status}"' in body
    assert 'class="brand"' in body and 'href="/" data-testid="way-back"' in body
    assert "/static/css/app.css" in body


def test_an_unknown_page_is_the_sites_404_with_its_navigation(curator_client):
    response = curator_client.get("/candidates/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    _styled(body, 404)
    assert "<code>/candidates/no-such-page/</code>" in body and 'aria-label="Main"' in body


def test_a_page_outside_ones_role_is_the_sites_403(annotator_client):
    response = annotator_client.get("/evaluation/v3ast/")
    assert response.status_code == 403
    body = response.content.decode()
    _styled(body, 403)
    assert "ask an admin" in body


@pytest.mark.urls("tests.error_urls")
def test_a_failure_is_the_sites_500_page_and_the_apis_error_shape(curator):
    client = Client(raise_request_exception=False)
    client.force_login(curator)
    response = client.get("/broken/")
    assert response.status_code == 500
    body = response.content.decode()
    _styled(body, 500)
    assert "a failure the test provokes" not in body
    api = client.get("/api/broken/")
    assert api.status_code == 500 and api.json() == {
        "errors": [{"field": "path", "message": "The server failed to answer; the failure was logged."}]
    }


def test_the_demos_local_settings_answer_a_missing_page_with_the_sites_404(tmp_path):
    result = _run(
        "import django; django.setup(); from django.test import Client;"
        "r = Client().get('/no-such-page/', HTTP_HOST='127.0.0.1');"
        'print(r.status_code, \'data-testid="error-page" data-status="404"\' in r.content.decode())',
        DJANGO_SETTINGS_MODULE="veriharm_site.settings.local",
        VERIHARM_VAR_DIR=str(tmp_path),
    )
    assert result.stdout.split() == ["404", "True"], result.stderr
