"""Sandboxes that agent code runs in: one interface, a bubblewrap and a docker backend.

The package's root modules are the layer both backends stand on; neither they nor this file import a
backend. A backend is chosen by name in ``registry`` (``get_backend``, ``shared_backend``), the one
package above both backends, which nothing in the sandbox imports.
"""

from .archives import ArchiveInfo, ArchiveTooLarge
from .environment import Environment, ExecResult, Limits, SandboxError
from .interface import Sandbox, SandboxBackend, Snapshot

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
