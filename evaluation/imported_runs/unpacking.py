"""Uploads that are archives, checked before anything in them is read: a Harbor job directory as a
.tar.gz (regular files and folders only, inside it) and an Inspect .eval log (a zip), each within
the limits of `bounds` on its members' number, each member's size and the whole unpacked size."""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile
from pathlib import Path

from .bounds import MAX_MEMBER_BYTES, MAX_MEMBERS, MAX_UNPACKED_BYTES
from .records import LogRefused


def _check_sizes(name: str, member: str, size: int, count: int, total: int) -> None:
    if count > MAX_MEMBERS:
        raise LogRefused([f"{name}: holds more than the limit of {MAX_MEMBERS} files"])
    if size > MAX_MEMBER_BYTES:
        raise LogRefused(
            [f"{name}: {member} unpacks to more than the limit of {MAX_MEMBER_BYTES // 2**20} MiB per file"]
        )
    if total > MAX_UNPACKED_BYTES:
        raise LogRefused([f"{name}: unpacks to more than the limit of {MAX_UNPACKED_BYTES // 2**20} MiB"])


def unpacked_job(name: str, data: bytes, into: Path) -> Path:
    """The job directory the archive holds (its one top folder), unpacked under `into`."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, OSError, EOFError):
        raise LogRefused([f"{name}: a job directory is uploaded as a .tar.gz of it"]) from None
    total = 0
    with tar:
        try:
            # One member at a time: an archive of a million empty files is refused at the limit,
            # before its list is held in memory.
            for count, member in enumerate(tar, start=1):
                if member.name.startswith("/") or ".." in member.name.split("/"):
                    raise LogRefused([f"{name}: {member.name} lies outside the job directory"])
                if not (member.isfile() or member.isdir()):
                    raise LogRefused([f"{name}: {member.name} is neither a file nor a folder"])
                total += member.size
                _check_sizes(name, member.name, member.size, count, total)
            tar.extractall(into, filter="data")
        except (tarfile.TarError, OSError, EOFError):
            raise LogRefused([f"{name}: the archive is damaged or truncated"]) from None
    roots = [child for child in into.iterdir()]
    if len(roots) != 1 or not roots[0].is_dir():
        raise LogRefused([f"{name}: the archive holds one folder, the job directory"])
    return roots[0]


END = struct.Struct("<4s4H2LH")  # the end of central directory record
END64 = struct.Struct("<4sQ2H2L4Q")  # its zip64 form, for archives of 65,535 members or more


def _declared_members(data: bytes) -> int | None:
    """The member count the archive's last record declares, read before its directory is: zipfile
    builds an object per member, and a directory of millions fits in an upload."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if end < 0 or end + END.size > len(data):
        return None
    count = END.unpack_from(data, end)[4]
    if count != 0xFFFF:
        return count
    start = data.rfind(b"PK\x06\x06", 0, end)
    return END64.unpack_from(data, start)[6] if 0 <= start <= len(data) - END64.size else None


def checked_zip(name: str, data: bytes) -> zipfile.ZipFile:
    """The zip in `data`, its members within the limits. Python's zipfile never unpacks a member past
    the size its directory declares (checked here), so reading one is bounded by that size."""
    declared = _declared_members(data)
    if declared is not None and declared > MAX_MEMBERS:
        raise LogRefused([f"{name}: holds more than the limit of {MAX_MEMBERS} files"])
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise LogRefused([f"{name}: not a readable Inspect eval log (not a zip archive)"]) from None
    total = 0
    for count, member in enumerate(members, start=1):
        total += member.file_size
        _check_sizes(name, member.filename, member.file_size, count, total)
    return archive
