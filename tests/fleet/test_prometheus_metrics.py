"""/metrics as Prometheus scrapes it: off until a token or an address is configured, then every
figure equal to what the database (and the broker) holds."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db.models import Sum
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from candidates.models import ImportJob, ImportStatus
from evaluation.models import ModelCall, ModelRoute, TranscriptStep, Trial, TrialStatus
from tests.conftest import make_user
from tests.fleet.fleet_support import heartbeat, no_other_workers, run_with_trials

TOKEN = "scrape-token-for-the-test"


@pytest.fixture
def broker():
    """The test broker with every queue declared, emptied before and after."""
    from veriharm_site.celery import app

    with app.connection_for_write() as conn:
        for queue in app.amqp.queues.values():
            queue(conn.default_channel).declare()
    app.control.purge()
    yield app
    app.control.purge()


def _scrape(client: APIClient, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


@pytest.mark.django_db
def test_metrics_are_off_until_configured_and_then_need_the_token(settings, admin_client_):
    anonymous = APIClient()
    settings.VERIHARM_METRICS_TOKEN = ""
    settings.VERIHARM_METRICS_ALLOWED_ADDRESSES = []
    for client in (anonymous, admin_client_):  # no role opens it, not even an admin's
        refused = client.get("/metrics")
        assert refused.status_code == 403
        assert "VERIHARM_METRICS_TOKEN" in refused.json()["errors"][0]["message"]
    settings.VERIHARM_METRICS_TOKEN = TOKEN
    assert anonymous.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert anonymous.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 403
    assert anonymous.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    # A token beyond ASCII is a wrong token, whatever its characters.
    for spoiled in (f"{TOKEN}\u00e9", "\u20ac" * 8, "\udcff"):
        assert anonymous.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {spoiled}").status_code == 403
    settings.VERIHARM_METRICS_TOKEN = ""
    settings.VERIHARM_METRICS_ALLOWED_ADDRESSES = ["10.0.0.0/8", "not an address"]
    assert anonymous.get("/metrics").status_code == 403  # the test client is 127.0.0.1
    assert anonymous.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200


@pytest.mark.django_db
def test_scraped_figures_equal_the_database(settings, broker):
    settings.VERIHARM_METRICS_TOKEN = TOKEN
    no_other_workers()
    heartbeat("worker@host-a", age=5)
    heartbeat("worker@host-b", age=400)
    heartbeat("worker@host-c", stopped=True)
    run = run_with_trials(
        [("worker@host-a", TrialStatus.RUNNING), ("worker@host-a", TrialStatus.DONE), ("worker@host-b", "done")]
        + [("", TrialStatus.QUEUED)] * 2
    )
    taken = run.trials.filter(status=TrialStatus.RUNNING).get()
    Trial.objects.filter(pk=taken.pk).update(attempts=3)
    TranscriptStep.objects.create(
        trial=taken,
        attempt=3,
        index=0,
        kind=TranscriptStep.Kind.NOTE,
        content="attempt 3 took over from worker@host-b, whose lease had expired",
    )
    for tokens, cost, status in ((100, "0.25", 200), (50, None, 200), (7, "0.01", 429)):
        ModelCall.objects.create(
            trial=taken,
            attempt=3,
            route=ModelRoute.MESSAGES,
            status_code=status,
            input_tokens=tokens,
            output_tokens=2 * tokens,
            latency=0.1,
            cost_usd=None if cost is None else Decimal(cost),
        )
    user = make_user("metrics-importer", "curator")
    ImportJob.objects.create(token="m1", created_by=user, total_lines=40)
    ImportJob.objects.create(token="m2", created_by=user, total_lines=2, status=ImportStatus.RUNNING)
    for _ in range(3):  # waiting for a Docker worker: none consumes here
        broker.send_task("evaluation.metrics_probe", queue="sandbox-docker")

    got = _scrape(APIClient(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert got[("veriharm_broker_up", ())] == 1
    assert got[("veriharm_queue_depth", (("queue", "sandbox-docker"),))] == 3
    assert got[("veriharm_queue_depth", (("queue", "sandbox-local"),))] == 0
    for status in TrialStatus.values:
        assert got[("veriharm_trials", (("status", status),))] == Trial.objects.filter(status=status).count()
    assert got[("veriharm_trials_ended", (("end", "verdict"),))] == 2
    assert got[("veriharm_trial_attempts_retried_total", ())] == 2
    assert got[("veriharm_lease_takeovers_total", ())] == 1
    ages = {labels: value for (name, labels), value in got.items() if name == "veriharm_worker_heartbeat_age_seconds"}
    assert set(ages) == {
        (("host", "host-a"), ("worker", "worker@host-a")),
        (("host", "host-b"), ("worker", "worker@host-b")),
    }
    assert (
        5
        <= ages[(("host", "host-a"), ("worker", "worker@host-a"))]
        < 400
        <= ages[(("host", "host-b"), ("worker", "worker@host-b"))]
    )
    route = ("route", ModelRoute.MESSAGES.value)
    assert got[("veriharm_gateway_calls_total", (("ok", "true"), route))] == 2
    assert got[("veriharm_gateway_calls_total", (("ok", "false"), route))] == 1
    assert got[("veriharm_gateway_tokens_total", (("kind", "input"), route))] == 157
    assert got[("veriharm_gateway_tokens_total", (("kind", "output"), route))] == 314
    assert got[("veriharm_gateway_cost_usd_total", (route,))] == pytest.approx(
        float(ModelCall.objects.aggregate(c=Sum("cost_usd"))["c"])
    )
    assert got[("veriharm_import_jobs", (("status", "queued"),))] == 1
    assert got[("veriharm_import_lines", (("status", "queued"),))] == 40
    assert got[("veriharm_import_lines", (("status", "running"),))] == 2


@pytest.mark.django_db
def test_the_web_tier_latency_counts_each_request_by_route(settings, curator_client):
    settings.VERIHARM_METRICS_TOKEN = TOKEN
    key = (
        "veriharm_http_request_duration_seconds_count",
        (("method", "GET"), ("route", "evaluation:runs"), ("status", "2xx")),
    )
    before = _scrape(APIClient(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}").get(key, 0)
    for _ in range(3):
        assert curator_client.get("/evaluation/").status_code == 200
    assert _scrape(APIClient(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")[key] == before + 3
