"""A refused request is logged as one warning line, never with a traceback; a failure keeps its traceback."""

import logging

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def _request_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "django.request"]


def test_a_page_outside_ones_role_logs_one_warning_line_without_a_traceback(annotator_client, caplog):
    with caplog.at_level(logging.INFO):
        assert annotator_client.get("/evaluation/v3ast/").status_code == 403
        assert annotator_client.get("/api/evaluation/runs/").status_code == 403
    records = _request_records(caplog)
    assert [(r.levelname, r.status_code) for r in records] == [("WARNING", 403), ("WARNING", 403)]
    assert records[0].getMessage() == "Forbidden (Permission denied): /evaluation/v3ast/"
    assert all(r.exc_info is None and not r.exc_text for r in records)
    assert "Traceback" not in caplog.text


@pytest.mark.urls("tests.error_urls")
def test_a_failure_still_logs_its_traceback(curator, caplog):
    client = Client(raise_request_exception=False)
    client.force_login(curator)
    with caplog.at_level(logging.INFO):
        assert client.get("/broken/").status_code == 500
    (record,) = _request_records(caplog)
    assert record.levelname == "ERROR" and record.exc_info is not None
    assert "Traceback" in caplog.text and "a failure the test provokes" in caplog.text
