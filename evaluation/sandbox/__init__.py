"""Sandboxes that agent code runs in: one interface, a bubblewrap and a docker backend."""

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
from .registry import available_backends, get_backend

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
    "available_backends",
    "get_backend",
]
