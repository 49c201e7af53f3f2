"""This process's backends, one per name and options, kept between trials."""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from ..interface import SandboxBackend
from .by_name import get_backend

logger = logging.getLogger(__name__)

_SHARED: dict[tuple[int, str, tuple[tuple[str, Any], ...]], SandboxBackend] = {}
_SHARED_LOCK = threading.Lock()


def shared_backend(name: str, **options: Any) -> SandboxBackend:
    """This process's one backend for ``name`` and ``options``: what it keeps between trials
    (warm pools, the image's seed, the verifier volume) serves every trial the process runs.
    A forked child gets its own."""
    key = (os.getpid(), name, tuple(sorted(options.items())))
    with _SHARED_LOCK:
        backend = _SHARED.get(key)
        if backend is None:
            backend = _SHARED[key] = get_backend(name, **options)
        return backend


def shared_backends() -> list[SandboxBackend]:
    """The backends ``shared_backend`` made in this process."""
    with _SHARED_LOCK:
        return [backend for (pid, _, _), backend in _SHARED.items() if pid == os.getpid()]


def shared_backends_drain() -> None:
    """Destroy the sandboxes the warm pools of this process's backends keep ready: a process that
    stops normally leaves none of its own behind (those of a killed one are the orphan sweep's)."""
    for backend in shared_backends():
        try:
            backend.drain_pools()
        except Exception:  # the next orphan sweep on this host removes what could not go now
            logger.warning("could not drain the %s backend's warm pools", backend.name, exc_info=True)
