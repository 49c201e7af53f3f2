"""The recovery sweep's part of leased work: find the rows that need a message again, and publish
them once across every worker.

- A running row whose heartbeat is older than its lease lost its worker: its task is published
  again, and the delivery takes it over (`leases.lease_claim`) instead of waiting out the broker's
  visibility timeout.
- A queued row older than VERIHARM_RECOVERY_QUEUED_SECONDS with no message waiting in the broker
  lost its publish (or a killed worker took its message along): it is published again. With an
  unreadable broker queued rows are left alone: without knowing what waits, publishing them every
  sweep could multiply a long backlog.

Publishing a row that needs no message is harmless: a claim is exactly-once, and a surplus
delivery ends as "finished" or "busy". Apps register a sweeper calling `republish` through
`veriharm_site.recovery.sweeper_register`, from their AppConfig.ready.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from veriharm_site.broker_messages import waiting_tasks
from veriharm_site.celery import app
from veriharm_site.recovery import sweep_lock

from .leases import Lease

# Enough for any backlog a sweep should act on at once; the next sweep takes the rest.
BATCH = 500


@dataclass
class Stale:
    """What one sweep found: rows whose lease expired, and queued rows with no message."""

    expired: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)

    @property
    def all(self) -> list[int]:
        return self.expired + self.lost


def stale_leases(lease: Lease, waiting: set[int] | None, now: datetime | None = None, batch: int = BATCH) -> Stale:
    """The rows of `lease` that need a message and have none waiting (`waiting`: the ids whose
    message waits in the broker, None when it could not be read)."""
    now = now or timezone.now()
    rows = lease.objects()
    expired = list(
        rows.filter(lease.expired_q(now)).order_by(lease.heartbeat_field, "pk").values_list("pk", flat=True)[:batch]
    )
    lost: list[int] = []
    if waiting is not None:
        queued_before = now - timedelta(seconds=settings.VERIHARM_RECOVERY_QUEUED_SECONDS)
        queued = Q(**{lease.status_field: lease.queued, f"{lease.queued_at_field}__lt": queued_before})
        lost = list(rows.filter(queued).order_by(lease.queued_at_field, "pk").values_list("pk", flat=True)[:batch])
    waiting = waiting or set()
    return Stale([pk for pk in expired if pk not in waiting], [pk for pk in lost if pk not in waiting])


def republish(
    name: str, task: str, find: Callable[[set[int] | None], Stale], publish: Callable[[list[int]], None]
) -> Stale:
    """Under the sweep's lock `name` (one sweeping worker at a time), read which `task` messages
    wait, `find` what needs one, and `publish` those ids. Published while the lock is held, so that
    a worker sweeping next reads these messages as waiting. Nothing when another worker sweeps."""
    with sweep_lock(name) as acquired:
        if not acquired:
            return Stale()
        found = waiting_tasks(app)
        stale = find(None if found is None else found.get(task, set()))
        publish(stale.all)
    return stale
