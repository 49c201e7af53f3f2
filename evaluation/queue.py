"""The work evaluation hands to its Celery workers, published by task name: the services that
publish never import `tasks.py`, which is built on them (only the worker imports it)."""

from __future__ import annotations

from celery import current_app
from django.conf import settings

TRIAL_EXECUTE = "evaluation.trial_execute"
RESCORE_EXECUTE = "evaluation.rescore_execute"
GENERATION_SEARCH_EXECUTE = "evaluation.generation_search_execute"

# Redis pops a queue's priority 0 before its other steps (kombu's priority_steps 0, 3, 6, 9): a trial
# the sweep takes over from a lost worker, or publishes again because its message was lost, is
# claimed by the next free worker instead of waiting behind the run's whole backlog.
ORDINARY = 6
TAKEOVER = 0


def sandbox_queue(backend: str) -> str:
    """The queue of the workers that run `backend`'s sandboxes (VERIHARM_SANDBOX_QUEUES): only a worker
    that has that backend consumes it; a task's retries stay on the queue it came from."""
    return settings.VERIHARM_SANDBOX_QUEUES.get(backend, settings.CELERY_TASK_DEFAULT_QUEUE)


def trials_publish(trials: list[tuple[int, str]], *, takeover: bool = False) -> None:
    """Publish (trial id, its run's backend) pairs, each to its backend's queue (call it from
    `transaction.on_commit`: the worker must find the rows); a takeover goes ahead of the queue."""
    priority = TAKEOVER if takeover else ORDINARY
    for pk, backend in trials:
        current_app.send_task(TRIAL_EXECUTE, args=(pk,), queue=sandbox_queue(backend), priority=priority)


def rescores_publish(rescores: list[tuple[int, str]]) -> None:
    """Re-scores make sandboxes too (of their trial's backend): same queues as trials."""
    for pk, backend in rescores:
        current_app.send_task(RESCORE_EXECUTE, args=(pk,), queue=sandbox_queue(backend))


def generation_searches_publish(searches: list[tuple[int, str]], *, takeover: bool = False) -> None:
    """Publish (search id, its run's backend) pairs: a search runs its rollouts in sandboxes, so it goes
    to its backend's queue as a trial does (call it from `transaction.on_commit`)."""
    priority = TAKEOVER if takeover else ORDINARY
    for pk, backend in searches:
        current_app.send_task(GENERATION_SEARCH_EXECUTE, args=(pk,), queue=sandbox_queue(backend), priority=priority)
