"""The storage of kept final states (no model imports: the FileField evaluates it at class creation)."""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.core.files.storage import FileSystemStorage, Storage


@cache
def final_state_storage() -> Storage:
    """A directory on disk by default (`VERIHARM_FINAL_STATE_DIR`); point every worker host and the
    web server at one shared location in a deployment with several hosts."""
    return FileSystemStorage(
        location=str(settings.VERIHARM_FINAL_STATE_DIR), directory_permissions_mode=0o700, file_permissions_mode=0o600
    )
