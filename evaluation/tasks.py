"""Celery entry points: thin, they take ids and hand over to the trial and re-score modules.

Only the worker imports this module; services publish through `evaluation.queue`."""

from __future__ import annotations

import logging

from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from evaluation import queue
from evaluation.generation import engine as generation_engine
from evaluation.sandbox.base import SandboxError
from evaluation.trials import execution, final_states, rescoring
from evaluation.trials.leases import AttemptResult, ClaimRefused
from veriharm_site.backoff import infrastructure_retry_delay, system_build_poll_delay

logger = logging.getLogger(__name__)


# A database that is briefly unreachable or locked (SQLite under two workers, a PostgreSQL
# restart) must not strand a trial in the queue: its task tries again, a bounded number of times.
DATABASE_RETRIES = 8


@shared_task(bind=True, acks_late=True, max_retries=None, name=queue.TRIAL_EXECUTE)
def trial_execute(self: Task, trial_id: int, abandoned: str = "") -> str:
    """Run one trial. A duplicate delivery of a finished trial does nothing; one that finds the
    trial held by a live worker checks again after a lease period, in case that worker dies.
    An attempt cut off from the database is taken back by the retry (`abandoned`: its lease token)."""
    try:
        result = execution.trial_execute(trial_id, worker=self.request.hostname or "", abandoned=abandoned)
    except execution.AttemptInterrupted as exc:
        if self.request.retries >= DATABASE_RETRIES:
            raise
        raise self.retry(exc=exc, kwargs={"abandoned": exc.token}, countdown=min(2**self.request.retries, 60)) from exc
    except (OperationalError, InterfaceError) as exc:
        if self.request.retries >= DATABASE_RETRIES:
            raise
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60)) from exc
    if result == ClaimRefused.BUSY:
        raise self.retry(countdown=settings.VERIHARM_TRIAL_LEASE_SECONDS)
    if result == AttemptResult.WAITING:
        # The sandbox system is being built: look again soon, with no attempt spent and no worker held.
        raise self.retry(countdown=system_build_poll_delay(self.request.retries + 1))
    _prune_final_states()
    return result


def _prune_final_states() -> None:
    """Workers delete kept final states past their retention as they go: no scheduler to run."""
    try:
        final_states.prune_expired(limit=50)
    except Exception:  # never the trial's failure: the next trial tries again
        logger.exception("pruning expired final states failed")


# A sandbox that cannot be made now may be there later; past this the re-score is recorded failed.
RESCORE_RETRIES = 3


@shared_task(bind=True, acks_late=True, max_retries=RESCORE_RETRIES, name=queue.RESCORE_EXECUTE)
def rescore_execute(self: Task, rescore_id: int) -> str:
    """Score a kept final state against a revision's tests; a second delivery records nothing new."""
    try:
        return rescoring.rescore_execute(rescore_id)
    except (OperationalError, InterfaceError, SandboxError) as exc:
        if self.request.retries >= RESCORE_RETRIES:
            return rescoring.rescore_fail(rescore_id, f"gave up after {self.request.retries + 1} attempts: {exc}")
        raise self.retry(exc=exc, countdown=infrastructure_retry_delay(self.request.retries + 1)) from exc


@shared_task(bind=True, acks_late=True, max_retries=None, name=queue.GENERATION_SEARCH_EXECUTE)
def generation_search_execute(self: Task, search_id: int) -> str:
    """Run one generation search from the step its record lacks. A delivery of an ended search does
    nothing; one that finds it held by a live worker checks again after a lease period."""
    try:
        result = generation_engine.search_execute(search_id, worker=self.request.hostname or "")
    except (OperationalError, InterfaceError) as exc:
        if self.request.retries >= DATABASE_RETRIES:
            raise
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 60)) from exc
    if result == generation_engine.ClaimRefused.BUSY:
        raise self.retry(countdown=settings.VERIHARM_TRIAL_LEASE_SECONDS)
    if result == generation_engine.WAITING:
        raise self.retry(countdown=system_build_poll_delay(self.request.retries + 1))
    return result
