"""The recovery sweep every Celery worker runs, so nothing waits for the broker to notice a death.

A worker killed mid-task keeps its message unacknowledged until the broker's visibility timeout
(two hours here) and a lost publish never comes back at all. Instead of a separate `celery beat`
process, which `make run`, docker compose and every other deployment would have to remember to
start (and run exactly once), each worker runs this sweep in a thread of its main process:

- every VERIHARM_RECOVERY_SWEEP_SECONDS, each registered sweeper runs (apps register theirs in
  their AppConfig.ready, so this module imports none of them);
- sweepers that publish tasks again take a database-wide lock first (`sweep_lock`), so that of
  several workers sweeping at the same moment one publishes and the others see its messages;
- re-publishing is always safe: the tasks claim their work exactly once.

It runs in the main process, not in a pool child, so that a sweep is never stuck behind a
long trial, and each sweep closes its database connection so no connection is open when the
pool forks a new child.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from celery import bootsteps

if TYPE_CHECKING:
    from celery.worker import WorkController

logger = logging.getLogger(__name__)

# What a sweeper returns (a report, the ids it touched) is not used here.
Sweeper = Callable[[], object]
_SWEEPERS: dict[str, Sweeper] = {}


def sweeper_register(name: str, sweeper: Sweeper) -> None:
    """Run `sweeper` in every sweep (idempotent by name)."""
    _SWEEPERS[name] = sweeper


def sweep_once() -> None:
    """One pass of every sweeper; a failure of one never stops the others or the next pass."""
    from django.db import close_old_connections, connection

    close_old_connections()
    try:
        for name, sweeper in list(_SWEEPERS.items()):
            try:
                sweeper()
            except Exception:
                logger.exception("recovery sweeper %s failed", name)
    finally:
        connection.close()


@contextmanager
def sweep_lock(name: str) -> Iterator[bool]:
    """A transaction holding a lock no other sweep of `name` holds; yields False when another
    worker is sweeping right now (PostgreSQL advisory lock; SQLite's IMMEDIATE transactions
    already admit one writer at a time)."""
    from django.db import connection, transaction

    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [zlib.crc32(f"veriharm-sweep:{name}".encode())])
                acquired = bool(cursor.fetchone()[0])
        else:
            acquired = True
        yield acquired


class RecoverySweep(bootsteps.StartStopStep):
    """Worker bootstep: a daemon thread sweeping at the configured interval (0 turns it off)."""

    # After the pool: its children are forked before the thread exists.
    requires = ("celery.worker.components:Pool",)

    def __init__(self, worker: WorkController, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, worker: WorkController) -> None:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured

        # Raised here, a worker start fails ("Unrecoverable error"): a signal handler's error would
        # only be logged.
        problems = broker_settings_problems(settings)
        if problems:
            raise ImproperlyConfigured("; ".join(problems))
        interval = float(getattr(settings, "VERIHARM_RECOVERY_SWEEP_SECONDS", 0))
        if interval <= 0:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(interval,), name="veriharm-recovery-sweep", daemon=True
        )
        self._thread.start()
        logger.info("recovery sweep every %.0fs", interval)

    def _loop(self, interval: float) -> None:
        # A first pass at once: a worker started after a crash recovers what the crash left.
        while not self._stop.is_set():
            sweep_once()
            if self._stop.wait(interval):
                return

    def stop(self, worker: WorkController) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    # A cold shutdown (and the test workers' exit) calls `terminate`, which bootsteps map to a
    # `terminate` of their own object only: without this the thread outlives its worker.
    shutdown = stop

    def terminate(self, parent: WorkController) -> None:
        self.stop(parent)


def broker_settings_problems(settings: object) -> list[str]:
    """What is inconsistent between the broker and the longest task: a redelivery of a task that
    is still running would start it twice, so the visibility timeout must exceed the hard limit."""
    problems: list[str] = []
    url = str(getattr(settings, "CELERY_BROKER_URL", ""))
    hard = getattr(settings, "CELERY_TASK_TIME_LIMIT", None)
    soft = getattr(settings, "CELERY_TASK_SOFT_TIME_LIMIT", None)
    if hard and soft and soft >= hard:
        problems.append(f"CELERY_TASK_SOFT_TIME_LIMIT ({soft}s) must be below CELERY_TASK_TIME_LIMIT ({hard}s)")
    if url.startswith(("redis", "rediss", "sqs")):
        timeout = (getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}).get("visibility_timeout", 3600)
        if not hard or timeout <= hard:
            problems.append(
                f"the broker's visibility_timeout ({timeout}s) must exceed CELERY_TASK_TIME_LIMIT ({hard}s), "
                "or a running task is delivered a second time"
            )
    lease = getattr(settings, "VERIHARM_TRIAL_LEASE_SECONDS", None)
    beat = getattr(settings, "VERIHARM_TRIAL_HEARTBEAT_SECONDS", None)
    if lease and beat and beat * 3 > lease:
        problems.append(
            f"VERIHARM_TRIAL_HEARTBEAT_SECONDS ({beat}) must beat at least three times per lease ({lease}s)"
        )
    return problems
