"""Celery entry points: thin, they take ids and hand over to the execution module."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from . import execution


@shared_task(bind=True, acks_late=True, max_retries=None, name="evaluation.trial_execute")
def trial_execute(self, trial_id: int) -> str:
    """Run one trial. A duplicate delivery of a finished trial does nothing; one that finds the
    trial held by a live worker checks again after a lease period, in case that worker dies."""
    result = execution.trial_execute(trial_id, worker=self.request.hostname or "")
    if result == "busy":
        raise self.retry(countdown=settings.VERIHARM_TRIAL_LEASE_SECONDS)
    return result
