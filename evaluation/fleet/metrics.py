"""What operators scrape at /metrics, in Prometheus' text format.

Figures of the database are read at each scrape (a collector, not counters kept in a process), so
any web process answers the same and a restart loses nothing; what only a process knows (request
latency, `veriharm_site.request_metrics`) comes from prometheus_client's own registry beside it.
Queue depths are read from the broker without consuming anything."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import Count, F, Q, Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from candidates.models import ImportJob, ImportStatus
from evaluation.models.taxonomy import TrialEnd

from ..models import ModelCall, TranscriptStep, Trial, TrialStatus
from .selectors import heartbeat_ages

logger = logging.getLogger(__name__)

# The note `trial_claim` writes when an attempt takes a trial over from a worker whose lease expired.
TAKEOVER_NOTE = "took over from"


def queue_depths() -> dict[str, int] | None:
    """Messages waiting in each configured queue; None when the broker does not answer."""
    from veriharm_site.celery import app

    names = sorted({settings.CELERY_TASK_DEFAULT_QUEUE, *settings.VERIHARM_SANDBOX_QUEUES.values()})
    try:
        with app.connection_for_read() as conn:
            # The transport's own channel (kombu's stubs give the abstract one, without queue_declare).
            channel: Any = conn.default_channel
            # Not passive: a queue no worker has declared yet (none consumes it) counts 0, not an error.
            return {name: int(channel.queue_declare(queue=name).message_count) for name in names}
    except Exception:  # a scrape must answer while the broker is down: it says so in veriharm_broker_up
        logger.warning("could not read the broker's queue depths", exc_info=True)
        return None


class DatabaseCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        depths = queue_depths()
        up = GaugeMetricFamily("veriharm_broker_up", "1 when the broker answered this scrape")
        up.add_metric([], 0 if depths is None else 1)
        yield up
        queued = GaugeMetricFamily("veriharm_queue_depth", "Messages waiting in each queue", labels=["queue"])
        for name, depth in sorted((depths or {}).items()):
            queued.add_metric([name], depth)
        yield queued

        by_status = dict(Trial.objects.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
        trials = GaugeMetricFamily("veriharm_trials", "Trials by state", labels=["status"])
        for status in TrialStatus.values:
            trials.add_metric([status], by_status.get(status, 0))
        yield trials
        by_end = dict(Trial.objects.exclude(end="").values_list("end").annotate(n=Count("pk")).values_list("end", "n"))
        ends = GaugeMetricFamily("veriharm_trials_ended", "Finished trials by how they ended", labels=["end"])
        for end in TrialEnd.values:
            ends.add_metric([end], by_end.get(end, 0))
        yield ends

        again = Trial.objects.filter(attempts__gt=1).aggregate(n=Sum(F("attempts") - 1))["n"] or 0
        yield CounterMetricFamily("veriharm_trial_attempts_retried", "Attempts beyond each trial's first", value=again)
        takeovers = TranscriptStep.objects.filter(
            kind=TranscriptStep.Kind.NOTE, index=0, content__contains=TAKEOVER_NOTE
        ).count()
        yield CounterMetricFamily(
            "veriharm_lease_takeovers",
            "Attempts that took a trial over from a worker that stopped answering",
            value=takeovers,
        )

        ages = GaugeMetricFamily(
            "veriharm_worker_heartbeat_age_seconds",
            "Seconds since each worker's last heartbeat (workers stopped cleanly are left out)",
            labels=["worker", "host"],
        )
        for name, host, age in sorted(heartbeat_ages()):
            ages.add_metric([name, host], age)
        yield ages

        calls = CounterMetricFamily(
            "veriharm_gateway_calls", "Model calls the gateway passed on, by route and outcome", labels=["route", "ok"]
        )
        tokens = CounterMetricFamily("veriharm_gateway_tokens", "Tokens of those calls", labels=["route", "kind"])
        cost = CounterMetricFamily(
            "veriharm_gateway_cost_usd", "Their cost, where the price is known", labels=["route"]
        )
        rows = (
            ModelCall.objects.values("route")
            .annotate(
                ok=Count("pk", filter=Q(status_code__lt=400, gateway_failure=False)),
                failed=Count("pk", filter=Q(status_code__gte=400) | Q(gateway_failure=True)),
                input_tokens=Sum("input_tokens"),
                output_tokens=Sum("output_tokens"),
                cost=Sum("cost_usd"),
            )
            .order_by("route")
        )
        for row in rows:
            calls.add_metric([row["route"], "true"], row["ok"])
            calls.add_metric([row["route"], "false"], row["failed"])
            tokens.add_metric([row["route"], "input"], row["input_tokens"] or 0)
            tokens.add_metric([row["route"], "output"], row["output_tokens"] or 0)
            cost.add_metric([row["route"]], float(row["cost"] or 0))
        yield calls
        yield tokens
        yield cost

        jobs = GaugeMetricFamily("veriharm_import_jobs", "Import jobs by state", labels=["status"])
        lines = GaugeMetricFamily("veriharm_import_lines", "Lines of those jobs' files", labels=["status"])
        per_status: dict[str, tuple[int, int]] = {
            status: (n, total or 0)
            for status, n, total in ImportJob.objects.values("status")
            .annotate(n=Count("pk"), lines=Sum("total_lines"))
            .values_list("status", "n", "lines")
        }
        for status in ImportStatus.values:
            n, total = per_status.get(status, (0, 0))
            jobs.add_metric([status], n)
            lines.add_metric([status], total)
        yield jobs
        yield lines
