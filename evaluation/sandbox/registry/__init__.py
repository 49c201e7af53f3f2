"""Backends by name, so callers pick one from configuration ("local" or "docker").

This package stands above both backends and the sandbox's shared layer: it imports them, and nothing
in the sandbox imports it (a package of its own, so that the sandbox's root modules, which the
backends import, never reach a backend through it).

- ``by_name``: ``get_backend``, a new backend of a name, and ``available_backends``
- ``shared``: ``shared_backend``, this process's one backend of a name and options, and the drain of
  their warm pools when the process stops
"""

from .by_name import available_backends, get_backend
from .shared import shared_backend, shared_backends, shared_backends_drain

__all__ = ["available_backends", "get_backend", "shared_backend", "shared_backends", "shared_backends_drain"]
