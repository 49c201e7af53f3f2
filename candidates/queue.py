"""The work the candidates app hands to its Celery workers, published by task name: the services
that publish never import `tasks.py`, which is built on them (only the worker imports it)."""

from __future__ import annotations

from celery import current_app

IMPORT_JOB_EXECUTE = "candidates.import_job_execute"


def import_job_publish(job_id: int) -> None:
    """Ask a worker to run one import job (call it from `transaction.on_commit`)."""
    current_app.send_task(IMPORT_JOB_EXECUTE, args=(job_id,))
