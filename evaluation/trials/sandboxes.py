"""The sandboxes a worker makes, as the settings configure them: shared by trials and re-scores."""

from __future__ import annotations

from django.conf import settings

from evaluation.sandbox.base import Limits, SandboxBackend
from evaluation.sandbox.registry import shared_backend


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
