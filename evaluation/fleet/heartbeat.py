"""Every worker writes a heartbeat of its own, so that operators see the fleet (the workers page,
/metrics) without asking the broker, which only answers for workers that are up right now.

A bootstep of the worker's main process, like the recovery sweep: it beats on its own thread, so
a long trial never delays it, and closes its database connection after each beat, so none is open
when the pool forks a child. The host is the part of the Celery node name after "@" (`-n
worker@host`; Celery's default is the machine's host name)."""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import TYPE_CHECKING, Any

from celery import bootsteps
from django.conf import settings
from django.utils import timezone

from .services import WorkerInfo, worker_beat, worker_stopped

if TYPE_CHECKING:
    from celery.worker import WorkController

logger = logging.getLogger(__name__)


def host_of(name: str) -> str:
    """The host part of a Celery node name; the machine's own name when it has none."""
    return name.partition("@")[2] or socket.gethostname()


def backends_of(queues: list[str]) -> tuple[str, ...]:
    """The sandbox backends whose queue is among `queues`."""
    return tuple(sorted(b for b, q in settings.VERIHARM_SANDBOX_QUEUES.items() if q in queues))


def worker_info(worker: WorkController) -> WorkerInfo:
    queues = sorted(worker.app.amqp.queues.consume_from)
    # Set by WorkController.setup_defaults; celery's stubs leave them out.
    name = str(getattr(worker, "hostname", "") or socket.gethostname())
    return WorkerInfo(
        name=name,
        host=host_of(name),
        pid=os.getpid(),
        queues=tuple(queues),
        backends=backends_of(queues),
        concurrency=int(getattr(worker, "concurrency", 0) or 1),
        started_at=timezone.now(),
    )


def beat_once(info: WorkerInfo) -> None:
    from django.db import close_old_connections, connection

    close_old_connections()
    try:
        worker_beat(info)
    except Exception:  # a database down for a moment: the next beat says it again
        logger.exception("worker heartbeat failed")
    finally:
        connection.close()


class FleetHeartbeat(bootsteps.StartStopStep):
    """Worker bootstep: a daemon thread beating every VERIHARM_WORKER_HEARTBEAT_SECONDS (0: never)."""

    requires = ("celery.worker.components:Pool",)

    def __init__(self, worker: WorkController, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._info: WorkerInfo | None = None

    def start(self, worker: WorkController) -> None:
        interval = float(settings.VERIHARM_WORKER_HEARTBEAT_SECONDS)
        if interval <= 0:
            return
        self._info = worker_info(worker)
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(self._info, interval), name="veriharm-worker-heartbeat", daemon=True
        )
        self._thread.start()

    def _loop(self, info: WorkerInfo, interval: float) -> None:
        while not self._stop.is_set():
            beat_once(info)
            if self._stop.wait(interval):
                return

    def stop(self, worker: WorkController) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if self._info is not None:
            from django.db import connection

            try:
                worker_stopped(self._info.name)
            except Exception:
                logger.exception("could not record the worker's stop")
            finally:
                connection.close()
            self._info = None

    # A cold shutdown calls `terminate`: without it the thread would go on beating for a worker that
    # is gone (in a test process, into the next test's tables).
    shutdown = stop

    def terminate(self, parent: WorkController) -> None:
        self.stop(parent)
