"""Sandboxes that agent code runs in: one interface, a bubblewrap and a docker backend.

The package's root modules are the layer both backends stand on; neither they nor this file import a
backend. A backend is chosen by name in ``registry`` (``get_backend``, ``shared_backend``), the one
module above both backends, which nothing in the sandbox imports.
"""

from .base import (
    ArchiveInfo,
    ArchiveTooLarge,
    Environment,
    ExecResult,
    Limits,
    Sandbox,
    SandboxBackend,
    SandboxError,
    Snapshot,
)

__all__ = [
    "ArchiveInfo",
    "ArchiveTooLarge",
    "Environment",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "Snapshot",
]
