"""A new backend of a name: "local" (bubblewrap) or "docker"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..interface import SandboxBackend


def _local(**options: Any) -> SandboxBackend:
    from ..bubblewrap import BubblewrapBackend

    return BubblewrapBackend(**options)


def _docker(**options: Any) -> SandboxBackend:
    # Imported lazily: the docker SDK is only needed by callers that use it.
    from ..docker import DockerBackend

    return DockerBackend(**options)


_BACKENDS: dict[str, Callable[..., SandboxBackend]] = {"local": _local, "docker": _docker}


def available_backends() -> tuple[str, ...]:
    return tuple(_BACKENDS)


def get_backend(name: str, **options: Any) -> SandboxBackend:
    """A new backend instance; options go to its constructor (e.g. root=, image=)."""
    try:
        factory = _BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown sandbox backend {name!r}; choose one of {', '.join(_BACKENDS)}") from None
    return factory(**options)
