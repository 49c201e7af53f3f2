"""Which reader reads which harness's results, from a file's bytes or a path."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from .bounds import MAX_UPLOAD_BYTES
from .harbor_jobs import harbor_job_read
from .inspect_logs import inspect_log_read
from .records import ImportedLog, LogRefused
from .unpacking import unpacked_job


def _inspect(path: Path) -> ImportedLog:
    if not path.is_file():
        raise LogRefused([f"{path.name}: an Inspect log is one file"])
    if path.stat().st_size > MAX_UPLOAD_BYTES:
        raise LogRefused([f"{path.name}: larger than the limit of {MAX_UPLOAD_BYTES // 2**20} MiB"])
    return inspect_log_read(path.name, path.read_bytes())


def _harbor(path: Path) -> ImportedLog:
    if not path.is_dir():
        raise LogRefused([f"{path.name}: a Harbor job is a directory (upload it as a .tar.gz)"])
    return harbor_job_read(path)


READERS: dict[str, Callable[[Path], ImportedLog]] = {"inspect": _inspect, "harbor": _harbor}


def read_upload(harness: str, name: str, data: bytes) -> ImportedLog:
    """An uploaded log: an Inspect log file as it is, a Harbor job directory as a .tar.gz of it."""
    if harness not in READERS:
        raise LogRefused([f"harness must be one of {', '.join(sorted(READERS))}, not {harness!r}"])
    if len(data) > MAX_UPLOAD_BYTES:
        raise LogRefused([f"{name}: larger than the limit of {MAX_UPLOAD_BYTES // 2**20} MiB"])
    if harness == "inspect":
        return inspect_log_read(name, data)
    with tempfile.TemporaryDirectory() as scratch:
        return READERS[harness](unpacked_job(name, data, Path(scratch)))


def read_log(harness: str, path: Path) -> ImportedLog:
    if harness not in READERS:
        raise LogRefused([f"harness must be one of {', '.join(sorted(READERS))}, not {harness!r}"])
    return READERS[harness](path)
