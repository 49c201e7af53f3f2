"""Where the kept final states of trials live, and how long.

The archives go through a Django storage (a directory on disk by default,
`VERIHARM_FINAL_STATE_DIR`), so a deployment with several worker hosts can point
every worker and the web server at one shared store.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from evaluation.models import FinalState
from evaluation.trials.storage import final_state_storage as storage

CHUNK = 1024 * 1024


def max_bytes() -> int:
    return settings.VERIHARM_FINAL_STATE_MAX_MB * 1024 * 1024


def keeping() -> bool:
    return settings.VERIHARM_FINAL_STATE_MAX_MB > 0


def scratch_path(trial_id: int) -> Path:
    """A private host path for a trial's archive while the trial runs."""
    directory = Path(tempfile.gettempdir()) / "veriharm-final-states"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory / f"trial-{trial_id}-{os.getpid()}-{os.urandom(4).hex()}.tar.gz"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def expiry():
    retention = settings.VERIHARM_FINAL_STATE_RETENTION_DAYS
    return timezone.now() + timedelta(days=retention) if retention > 0 else None


def store(run_id: int, trial_id: int, path: Path) -> str:
    """Copy an archive into the store; returns its name there. Recorded by `leases.trial_record`."""
    with open(path, "rb") as handle:
        return storage().save(f"{run_id}/trial-{trial_id}.tar.gz", File(handle))


def delete(name: str) -> None:
    storage().delete(name)


@contextmanager
def local_copy(state: FinalState) -> Iterator[Path]:
    """The archive as a host file, checked against its recorded sha256, removed afterwards."""
    if not state.available:
        raise FileNotFoundError(f"the final state of trial {state.trial_id} is no longer kept")
    target = scratch_path(state.trial_id)
    try:
        with state.archive.open("rb") as source, open(target, "wb") as out:
            while chunk := source.read(CHUNK):
                out.write(chunk)
        if file_sha256(target) != state.sha256:
            raise ValueError(f"the kept final state of trial {state.trial_id} does not match its recorded sha256")
        yield target
    finally:
        target.unlink(missing_ok=True)


def prune_unreferenced(now: datetime | None = None) -> int:
    """Delete stored archives that no FinalState points to and that are older than
    VERIHARM_FINAL_STATE_ORPHAN_HOURS. Returns how many.

    A worker that loses the database while recording cannot tell whether its commit landed, so it
    leaves the archive it stored; this is where an archive that was never recorded goes.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.VERIHARM_FINAL_STATE_ORPHAN_HOURS)
    store = storage()
    try:
        directories, _ = store.listdir("")
    except FileNotFoundError:
        return 0
    deleted = 0
    for directory in directories:
        _, files = store.listdir(directory)
        names = [f"{directory}/{file}" for file in files]
        recorded = set(FinalState.objects.filter(archive__in=names).values_list("archive", flat=True))
        for name in names:
            if name not in recorded and store.get_modified_time(name) < cutoff:
                store.delete(name)
                deleted += 1
    return deleted


def prune_expired(now: datetime | None = None, limit: int = 500) -> int:
    """Delete the archives whose retention ended; the rows stay, marked pruned. Returns how many."""
    now = now or timezone.now()
    pruned = 0
    expired = FinalState.objects.filter(pruned_at__isnull=True, expires_at__lte=now).values_list("pk", flat=True)
    for pk in list(expired[:limit]):
        with transaction.atomic():
            state = FinalState.objects.select_for_update().filter(pk=pk, pruned_at__isnull=True).first()
            if state is None:
                continue
            name = state.archive.name
            assert name is not None  # read from a NOT NULL column (None is a FieldFile's without one)
            state.archive = ""
            state.pruned_at = now
            state.save(update_fields=["archive", "pruned_at"])
            transaction.on_commit(partial(_archive_delete, name))
        pruned += 1
    return pruned


def _archive_delete(name: str) -> None:
    storage().delete(name)
