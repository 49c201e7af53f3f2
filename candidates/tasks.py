"""Celery entry points of the candidates app: thin, they take ids; their retries are the
leased-work core's (`veriharm_site.leased_work.retries`)."""

from __future__ import annotations

from functools import partial

from celery import Task, shared_task
from django.conf import settings

from veriharm_site.backoff import infrastructure_retry_delay
from veriharm_site.leased_work.retries import DATABASE_ERRORS, database_delay, retry_later, task_retry

from . import import_jobs, queue


@shared_task(bind=True, acks_late=True, max_retries=None, name=queue.IMPORT_JOB_EXECUTE)
def import_job_execute(self: Task, job_id: int) -> str:
    """Import one job's files; safe to deliver any number of times (applied at most once)."""
    retries = self.request.retries
    try:
        return import_jobs.import_job_execute(job_id)
    except DATABASE_ERRORS as exc:
        # A database briefly away or locked (SQLite under a second writer): try again, a bounded number of times.
        task_retry(
            self,
            exc,
            allowed=settings.VERIHARM_IMPORT_MAX_ATTEMPTS * 3 - 1,
            countdown=database_delay(retries, cap=30),
            give_up=partial(import_jobs.import_job_fail, job_id, f"the database kept failing: {exc}"),
        )
    except Exception as exc:
        # Not the content (that is a refusal with its lines): files gone, a bug. Bounded retries.
        if retries + 1 >= settings.VERIHARM_IMPORT_MAX_ATTEMPTS:
            import_jobs.import_job_fail(job_id, f"{type(exc).__name__}: {exc}")
            return "failed"
        retry_later(self, exc, infrastructure_retry_delay(retries + 1))
