"""Writes of the fleet: a worker's heartbeat and its clean stop."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from .models import WorkerHeartbeat


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker says of itself; fixed for the life of its process."""

    name: str
    host: str
    pid: int
    queues: tuple[str, ...]
    backends: tuple[str, ...]
    concurrency: int
    started_at: datetime


def worker_beat(info: WorkerInfo) -> None:
    """Say this worker is alive now. A restarted worker of the same name takes over its row, so
    the page shows each worker once (and its latest start)."""
    now = timezone.now()
    WorkerHeartbeat.objects.update_or_create(
        name=info.name[:200],
        defaults={
            "host": info.host[:200] or "unknown",
            "pid": info.pid,
            "queues": list(info.queues),
            "backends": list(info.backends),
            "concurrency": max(info.concurrency, 1),
            "started_at": min(info.started_at, now),
            "beat_at": now,
            "stopped_at": None,
        },
    )


def worker_stopped(name: str) -> None:
    """A worker that shuts down cleanly says so, so the page need not wait for it to go silent."""
    now = timezone.now()
    WorkerHeartbeat.objects.filter(name=name[:200], stopped_at__isnull=True).update(stopped_at=now, beat_at=now)
