"""Celery entry points of the candidates app: thin, they take ids."""

from __future__ import annotations

from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from veriharm_site.backoff import infrastructure_retry_delay

from . import import_jobs, queue


@shared_task(bind=True, acks_late=True, max_retries=None, name=queue.IMPORT_JOB_EXECUTE)
def import_job_execute(self: Task, job_id: int) -> str:
    """Import one job's files; safe to deliver any number of times (applied at most once)."""
    try:
        return import_jobs.import_job_execute(job_id)
    except (OperationalError, InterfaceError) as exc:
        # A database briefly away or locked (SQLite under a second writer): try again, a bounded number of times.
        if self.request.retries + 1 >= settings.VERIHARM_IMPORT_MAX_ATTEMPTS * 3:
            import_jobs.import_job_fail(job_id, f"the database kept failing: {exc}")
            raise
        raise self.retry(exc=exc, countdown=min(2**self.request.retries, 30)) from exc
    except Exception as exc:
        # Not the content (that is a refusal with its lines): files gone, a bug. Bounded retries.
        if self.request.retries + 1 >= settings.VERIHARM_IMPORT_MAX_ATTEMPTS:
            import_jobs.import_job_fail(job_id, f"{type(exc).__name__}: {exc}")
            return "failed"
        raise self.retry(exc=exc, countdown=infrastructure_retry_delay(self.request.retries + 1)) from exc
