"""Reads of the fleet: the workers page and its API, and how many hosts a run's trials ran on."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from ..models import Run, Trial, TrialStatus
from .models import WorkerHeartbeat

# A worker rarely holds more than its concurrency; the page lists this many of its trials at most.
HELD_SHOWN = 20


@dataclass(frozen=True)
class WorkerRow:
    name: str
    host: str
    queues: list[str]
    backends: list[str]
    concurrency: int
    started_at: datetime
    beat_at: datetime
    heartbeat_age: float  # seconds since its last beat
    stopped_at: datetime | None
    held: int  # trials running under its lease now
    held_ids: list[int]

    @property
    def state(self) -> str:
        if self.stopped_at is not None:
            return "stopped"
        return "silent" if self.heartbeat_age > settings.VERIHARM_WORKER_SILENT_SECONDS else "live"


@dataclass(frozen=True)
class Fleet:
    live: list[WorkerRow]
    # Gone quiet without saying it stopped (killed, host lost, cut off), or stopped cleanly.
    silent: list[WorkerRow]
    stopped: list[WorkerRow]
    silent_after: float

    @property
    def hosts(self) -> int:
        return len({w.host for w in self.live})


def _held_by_worker() -> dict[str, list[int]]:
    held: dict[str, list[int]] = defaultdict(list)
    for pk, worker in (
        Trial.objects.filter(status=TrialStatus.RUNNING).order_by("pk").values_list("pk", "worker").iterator()
    ):
        held[worker].append(pk)
    return held


def fleet(now: datetime | None = None) -> Fleet:
    """Every worker that ever beat, live ones first by host; with the trials each holds."""
    now = now or timezone.now()
    held = _held_by_worker()
    rows = [
        WorkerRow(
            name=w.name,
            host=w.host,
            queues=list(w.queues),
            backends=list(w.backends),
            concurrency=w.concurrency,
            started_at=w.started_at,
            beat_at=w.beat_at,
            heartbeat_age=max((now - w.beat_at).total_seconds(), 0.0),
            stopped_at=w.stopped_at,
            held=len(held.get(w.name, [])),
            held_ids=held.get(w.name, [])[:HELD_SHOWN],
        )
        for w in WorkerHeartbeat.objects.order_by("host", "name")
    ]
    return Fleet(
        live=[r for r in rows if r.state == "live"],
        silent=[r for r in rows if r.state == "silent"],
        stopped=[r for r in rows if r.state == "stopped"],
        silent_after=float(settings.VERIHARM_WORKER_SILENT_SECONDS),
    )


def heartbeat_ages(now: datetime | None = None) -> list[tuple[str, str, float]]:
    """(worker, host, seconds since its last beat) of every worker not stopped cleanly."""
    now = now or timezone.now()
    return [
        (name, host, max((now - beat_at).total_seconds(), 0.0))
        for name, host, beat_at in WorkerHeartbeat.objects.filter(stopped_at__isnull=True).values_list(
            "name", "host", "beat_at"
        )
    ]


def run_hosts(run: Run) -> list[str]:
    """The hosts the run's trials ran on, by name: each trial's last attempt's (a trial taken over
    keeps only its new worker's name), the host part of its Celery node name."""
    workers = Trial.objects.filter(run=run).exclude(worker="").values_list("worker", flat=True).distinct()
    return sorted({w.partition("@")[2] or w for w in workers})
