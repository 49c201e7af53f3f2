"""A job directory uploaded as a .tar.gz, unpacked safely: regular files and folders only, inside it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from .records import LogRefused

MAX_UNPACKED_BYTES = 512 * 1024 * 1024


def unpacked_job(name: str, data: bytes, into: Path) -> Path:
    """The job directory the archive holds (its one top folder), unpacked under `into`."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, OSError, EOFError):
        raise LogRefused([f"{name}: a job directory is uploaded as a .tar.gz of it"]) from None
    total = 0
    with tar:
        members = tar.getmembers()
        for member in members:
            if member.name.startswith("/") or ".." in member.name.split("/"):
                raise LogRefused([f"{name}: {member.name} lies outside the job directory"])
            if not (member.isfile() or member.isdir()):
                raise LogRefused([f"{name}: {member.name} is neither a file nor a folder"])
            total += member.size
            if total > MAX_UNPACKED_BYTES:
                raise LogRefused([f"{name}: unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MiB"])
        try:
            tar.extractall(into, filter="data")
        except (tarfile.TarError, OSError, EOFError):
            raise LogRefused([f"{name}: the archive is damaged or truncated"]) from None
    roots = [child for child in into.iterdir()]
    if len(roots) != 1 or not roots[0].is_dir():
        raise LogRefused([f"{name}: the archive holds one folder, the job directory"])
    return roots[0]
