"""The sandboxes a worker makes, as the settings configure them: shared by trials and re-scores,
and destroyed when the worker stops normally."""

from __future__ import annotations

from typing import Any

from celery import signals
from django.conf import settings

from evaluation.sandbox.base import Limits, SandboxBackend
from evaluation.sandbox.registry import shared_backend, shared_backends_drain


def sandbox_limits() -> Limits:
    return Limits(
        memory_mb=settings.VERIHARM_SANDBOX_MEMORY_MB,
        cpus=settings.VERIHARM_SANDBOX_CPUS,
        pids=settings.VERIHARM_SANDBOX_PIDS,
        disk_mb=settings.VERIHARM_SANDBOX_DISK_MB,
    )


def default_backend_factory(name: str) -> SandboxBackend:
    # The process's own backend, so that its warm pools serve trial after trial.
    return shared_backend(
        name,
        pool_size=settings.VERIHARM_SANDBOX_POOL_SIZE,
        pool_environments=settings.VERIHARM_SANDBOX_POOL_ENVIRONMENTS,
    )


def _drain_on_stop(**_: Any) -> None:
    shared_backends_drain()


def worker_stop_drains_pools() -> None:
    """A worker that stops normally destroys the sandboxes its warm pools hold.

    Not through ``atexit``: a prefork pool child leaves through ``os._exit``, which skips it. Celery
    sends ``worker_process_shutdown`` in each pool child as it leaves (the parent waits for its
    children before exiting), and ``worker_shutdown`` in the main process (a solo or threads pool
    runs trials there). Each process drains only the backends it made."""
    signals.worker_process_shutdown.connect(_drain_on_stop, weak=False, dispatch_uid="veriharm-drain-pools")
    signals.worker_shutdown.connect(_drain_on_stop, weak=False, dispatch_uid="veriharm-drain-pools-main")
