"""What the recovery sweep does for evaluations (registered in EvaluationConfig.ready).

- Trials that need a message again, found and published once across every worker by the
  leased-work core (`veriharm_site.leased_work.sweep`): a running trial whose lease expired lost
  its worker, and its delivery takes it over (`leases.trial_claim`: a new attempt, a transcript
  note, the dead worker's sandboxes removed); a queued one with no message waiting lost its publish.
- Sandboxes whose owning worker process is gone are removed from this host, for every backend in
  VERIHARM_SANDBOX_CLEANUP_BACKENDS, whether or not a trial is ever taken over.

Publishing a trial that needs no message is harmless: a claim is exactly-once, and a surplus
delivery ends as "finished" or "busy".
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from evaluation import queue
from evaluation.models import Trial
from evaluation.sandbox.registry import get_backend
from evaluation.trials import final_states
from evaluation.trials.leases import TRIAL_LEASE
from veriharm_site.leased_work.sweep import republish, stale_leases

logger = logging.getLogger(__name__)

TRIAL_TASK = queue.TRIAL_EXECUTE


@dataclass
class SweepReport:
    expired: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    orphans_removed: int = 0


def trials_needing_a_message(waiting: set[int] | None, now: datetime | None = None) -> tuple[list[int], list[int]]:
    """(running trials whose lease expired, queued trials past the threshold) that have no message
    waiting (`waiting` None: the broker could not be read, and queued trials are left alone)."""
    stale = stale_leases(TRIAL_LEASE, waiting, now)
    return stale.expired, stale.lost


def _publish(ids: list[int]) -> None:
    backends = dict(Trial.objects.filter(pk__in=ids).values_list("pk", "run__backend"))
    queue.trials_publish([(pk, backends[pk]) for pk in ids], takeover=True)


def trials_republish() -> SweepReport:
    """Publish again every trial that needs a message, once across all sweeping workers."""
    stale = republish("trials", TRIAL_TASK, lambda waiting: stale_leases(TRIAL_LEASE, waiting), _publish)
    report = SweepReport(expired=stale.expired, lost=stale.lost)
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
