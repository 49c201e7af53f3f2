"""Celery entry points: thin, they take ids and hand over to the trial and re-score modules.

Only the worker imports this module; services publish through `evaluation.queue`."""

from __future__ import annotations

import logging

from celery import Task, shared_task

from evaluation import queue
from evaluation.generation import engine as generation_engine
from evaluation.sandbox.base import SandboxError
from evaluation.trials import execution, final_states, rescoring
from veriharm_site.backoff import infrastructure_retry_delay
from veriharm_site.leased_work.retries import DATABASE_ERRORS, leased_task_run, retry_later

logger = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, max_retries=None, name=queue.TRIAL_EXECUTE)
def trial_execute(self: Task, trial_id: int, abandoned: str = "") -> str:
    """Run one trial. A duplicate delivery of a finished trial does nothing; one that finds the
    trial held by a live worker checks again after a lease period, in case that worker dies.
    An attempt cut off from the database is taken back by the retry (`abandoned`: its lease token);
    the retries are the leased-work core's (`veriharm_site.leased_work.retries`)."""
    worker = self.request.hostname or ""
    result = leased_task_run(
        self, lambda token: execution.trial_execute(trial_id, worker=worker, abandoned=token), abandoned
    )
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
    except (*DATABASE_ERRORS, SandboxError) as exc:
        if self.request.retries >= RESCORE_RETRIES:
            return rescoring.rescore_fail(rescore_id, f"gave up after {self.request.retries + 1} attempts: {exc}")
        retry_later(self, exc, infrastructure_retry_delay(self.request.retries + 1))


@shared_task(bind=True, acks_late=True, max_retries=None, name=queue.GENERATION_SEARCH_EXECUTE)
def generation_search_execute(self: Task, search_id: int, abandoned: str = "") -> str:
    """Run one generation search from the step its record lacks. A delivery of an ended search does
    nothing; one that finds it held by a live worker checks again after a lease period."""
    worker = self.request.hostname or ""
    return leased_task_run(
        self, lambda token: generation_engine.search_execute(search_id, worker=worker, abandoned=token), abandoned
    )
