"""A candidate's page shows its harm tests in two panels (human verdicts and evaluations): both
are drawn from one read of each agent's latest result and one of the reference check."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.candidates.test_flag_warnings import FLAGGED, REASON, checked  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_panels_share_the_latest_results_and_the_reference_check(checked, admin_client_):  # noqa: F811
    with CaptureQueriesContext(connection) as queries:
        page = admin_client_.get(f"/candidates/c/{FLAGGED}/")
    html = page.content.decode()
    assert page.status_code == 200 and 'data-testid="human-verdicts"' in html
    panel = html.split('data-testid="evaluation-panel"')[1]
    assert REASON in panel.split('data-testid="reference-check"')[1].split("</p>")[0]
    assert 'data-testid="trial-history"' in panel
    sql = [q["sql"] for q in queries]
    assert sum('DISTINCT ON ("evaluation_trial"."candidate_id"' in s for s in sql) == 1
    # One read for the flags box (flagged checks only), one for both panels.
    assert sum('FROM "evaluation_referencecheck"' in s for s in sql) == 2
