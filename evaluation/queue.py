"""The work evaluation hands to its Celery workers, published by task name: the services that
publish never import `tasks.py`, which is built on them (only the worker imports it)."""

from __future__ import annotations

from celery import current_app
from django.conf import settings

TRIAL_EXECUTE = "evaluation.trial_execute"
RESCORE_EXECUTE = "evaluation.rescore_execute"


def sandbox_queue(backend: str) -> str:
    """The queue of the workers that run `backend`'s sandboxes (VERIHARM_SANDBOX_QUEUES): only a worker
    that has that backend consumes it; a task's retries stay on the queue it came from."""
    return settings.VERIHARM_SANDBOX_QUEUES.get(backend, settings.CELERY_TASK_DEFAULT_QUEUE)


def trials_publish(trials: list[tuple[int, str]]) -> None:
    """Publish (trial id, its run's backend) pairs, each to its backend's queue (call it from
    `transaction.on_commit`: the worker must find the rows)."""
    for pk, backend in trials:
        current_app.send_task(TRIAL_EXECUTE, args=(pk,), queue=sandbox_queue(backend))


def rescores_publish(rescores: list[tuple[int, str]]) -> None:
    """Re-scores make sandboxes too (of their trial's backend): same queues as trials."""
    for pk, backend in rescores:
        current_app.send_task(RESCORE_EXECUTE, args=(pk,), queue=sandbox_queue(backend))
