"""Runs that start by themselves once the sandbox system is ready (the demo's, under `make run`).

A hook, so the launch page can say that such runs wait without importing whoever launches them:
the demo app registers its check at start-up (`WAITING_RUNS_SOURCES`).
"""

from __future__ import annotations

from collections.abc import Callable

from veriharm_site.registries import Registry

# Each source says whether runs of its own wait for the sandbox system to be built.
WAITING_RUNS_SOURCES: Registry[Callable[[], bool]] = Registry()


def runs_wait_for_the_sandbox() -> bool:
    """Whether any registered source has runs that will launch once the sandbox system is ready."""
    return any(source() for source in WAITING_RUNS_SOURCES)
