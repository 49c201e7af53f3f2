"""A Celery task's retries around leased work, with their backoff.

- A database briefly unreachable or locked (SQLite under two workers, a PostgreSQL restart) must
  not strand work in the queue: the task tries again, a bounded number of times, each wait twice
  the last (`database_delay`).
- An attempt that lost the database mid-work ended without releasing its lease
  (`LeaseInterrupted`, carrying its token): the retry passes the token back as `abandoned`, so
  the claim takes the row back at once instead of refusing it as busy until the lease expires.
- A delivery that found the row held by a live worker (BUSY) looks again after a lease period, in
  case that worker dies; one that gave its claim back while the sandbox system is being built
  (WAITING) looks again soon (`veriharm_site.backoff.system_build_poll_delay`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from celery import Task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from veriharm_site.backoff import system_build_poll_delay

from .leases import ClaimRefused

DATABASE_ERRORS = (OperationalError, InterfaceError)
# How many times a task tries again after a database error before it gives up.
DATABASE_RETRIES = 8
# What leased work answers when it gave its claim back to wait for the sandbox system.
WAITING = "waiting"


class LeaseInterrupted(Exception):
    """An attempt lost the database and ended without releasing its lease, still held under `token`."""

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.token = token


def database_delay(retries: int, cap: float = 60) -> float:
    """Seconds before the retry that follows `retries` earlier ones: 1, 2, 4, ... up to `cap`."""
    return float(min(2**retries, cap))


def retry_later(task: Task, exc: Exception, countdown: float, kwargs: dict[str, object] | None = None) -> NoReturn:
    """Retry `task` after `countdown` seconds (with `kwargs` in place of its own, if given)."""
    if kwargs is None:
        raise task.retry(exc=exc, countdown=countdown) from exc
    raise task.retry(exc=exc, countdown=countdown, kwargs=kwargs) from exc


def task_retry(
    task: Task,
    exc: Exception,
    *,
    allowed: int,
    countdown: float,
    kwargs: dict[str, object] | None = None,
    give_up: Callable[[], object] | None = None,
) -> NoReturn:
    """Retry `task` after `countdown` seconds, or, once it has retried `allowed` times, call
    `give_up` (recording the failure, if the work has a record of one) and raise `exc`."""
    if task.request.retries >= allowed:
        if give_up is not None:
            give_up()
        raise exc
    retry_later(task, exc, countdown, kwargs)


def leased_task_run(task: Task, execute: Callable[[str], str], abandoned: str = "") -> str:
    """Run leased work from its task (`execute` takes the abandoned token, "" for none) and
    retry it as the module says; returns what the work answered otherwise."""
    try:
        result = execute(abandoned)
    except LeaseInterrupted as exc:
        delay = database_delay(task.request.retries)
        task_retry(task, exc, allowed=DATABASE_RETRIES, countdown=delay, kwargs={"abandoned": exc.token})
    except DATABASE_ERRORS as exc:
        task_retry(task, exc, allowed=DATABASE_RETRIES, countdown=database_delay(task.request.retries))
    if result == ClaimRefused.BUSY:
        raise task.retry(countdown=settings.VERIHARM_TRIAL_LEASE_SECONDS)
    if result == WAITING:
        # The sandbox system is being built: look again soon, with no attempt spent and no worker held.
        raise task.retry(countdown=system_build_poll_delay(task.request.retries + 1))
    return result
