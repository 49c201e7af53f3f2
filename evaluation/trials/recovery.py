"""What the recovery sweep does for evaluations (registered in EvaluationConfig.ready).

- A running trial whose heartbeat is older than its lease lost its worker: its task is published
  again, and the delivery takes it over (`leases.trial_claim`: a new attempt, a transcript note,
  the dead worker's sandboxes removed) instead of waiting out the broker's visibility timeout.
- A queued trial older than VERIHARM_RECOVERY_QUEUED_SECONDS with no message waiting in the
  broker lost its publish (or a killed worker took its message along): it is published again.
- Sandboxes whose owning worker process is gone are removed from this host, for every backend in
  VERIHARM_SANDBOX_CLEANUP_BACKENDS, whether or not a trial is ever taken over.

Publishing a trial that needs no message is harmless: a claim is exactly-once, and a surplus
delivery ends as "finished" or "busy".
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from evaluation import queue
from evaluation.models import Trial, TrialStatus
from evaluation.sandbox.registry import get_backend
from evaluation.trials import final_states
from veriharm_site.broker_messages import waiting_tasks
from veriharm_site.recovery import sweep_lock

logger = logging.getLogger(__name__)

TRIAL_TASK = queue.TRIAL_EXECUTE
# Enough for any backlog a sweep should act on at once; the next sweep takes the rest.
BATCH = 500


@dataclass
class SweepReport:
    expired: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    orphans_removed: int = 0


def trials_needing_a_message(waiting: set[int] | None, now: datetime | None = None) -> tuple[list[int], list[int]]:
    """(running trials whose lease expired, queued trials past the threshold) that have no message
    waiting. With an unreadable broker (`waiting` None) queued trials are left alone: without
    knowing what waits, publishing them every sweep could multiply a long backlog."""
    now = now or timezone.now()
    lease_start = now - timedelta(seconds=settings.VERIHARM_TRIAL_LEASE_SECONDS)
    expired = list(
        Trial.objects.filter(status=TrialStatus.RUNNING)
        .filter(Q(heartbeat_at__lt=lease_start) | Q(heartbeat_at__isnull=True))
        .order_by("heartbeat_at", "pk")
        .values_list("pk", flat=True)[:BATCH]
    )
    lost: list[int] = []
    if waiting is not None:
        queued_before = now - timedelta(seconds=settings.VERIHARM_RECOVERY_QUEUED_SECONDS)
        lost = list(
            Trial.objects.filter(status=TrialStatus.QUEUED, queued_at__lt=queued_before)
            .order_by("queued_at", "pk")
            .values_list("pk", flat=True)[:BATCH]
        )
    waiting = waiting or set()
    return [pk for pk in expired if pk not in waiting], [pk for pk in lost if pk not in waiting]


def trials_republish() -> SweepReport:
    """Publish again every trial that needs a message, once across all sweeping workers."""
    from veriharm_site.celery import app

    report = SweepReport()
    with sweep_lock("trials") as acquired:
        if not acquired:
            return report
        found = waiting_tasks(app)
        report.expired, report.lost = trials_needing_a_message(None if found is None else found.get(TRIAL_TASK, set()))
        # Published while the lock is held: a worker sweeping next reads these messages as waiting.
        backends = dict(Trial.objects.filter(pk__in=report.expired + report.lost).values_list("pk", "run__backend"))
        queue.trials_publish([(pk, backends[pk]) for pk in report.expired + report.lost], takeover=True)
    if report.expired:
        logger.warning(
            "recovery: published again %d trial(s) whose worker stopped answering: %s",
            len(report.expired),
            report.expired,
        )
    if report.lost:
        logger.warning(
            "recovery: published again %d queued trial(s) with no message: %s", len(report.lost), report.lost
        )
    return report


def orphans_remove() -> int:
    """Remove the sandboxes of dead worker processes on this host, for each configured backend."""
    removed = 0
    for name in settings.VERIHARM_SANDBOX_CLEANUP_BACKENDS:
        try:
            removed += get_backend(name).cleanup_orphans()
        except Exception:  # a backend that is not installed here has nothing to clean
            logger.warning("recovery: could not clean up orphans of the %s backend", name, exc_info=True)
    if removed:
        logger.warning("recovery: removed %d sandbox(es) of dead workers", removed)
    return removed


_ARCHIVE_SWEEP_SECONDS = 60 * 60
_last_archive_sweep: float | None = None


def unrecorded_archives_remove() -> int:
    """At most hourly per worker: listing the archive store is too slow for every sweep."""
    global _last_archive_sweep
    now = time.monotonic()
    if _last_archive_sweep is not None and now - _last_archive_sweep < _ARCHIVE_SWEEP_SECONDS:
        return 0
    _last_archive_sweep = now
    removed = final_states.prune_unreferenced()
    if removed:
        logger.warning("recovery: removed %d final-state archive(s) no trial recorded", removed)
    return removed


def sweep() -> SweepReport:
    report = trials_republish()
    # After the lock's transaction has ended: removing containers can take seconds.
    report.orphans_removed = orphans_remove()
    unrecorded_archives_remove()
    return report
