"""What a final state holds beyond a sandbox's pristine content: the members to send, the paths to delete.

A docker test-phase container can start out holding the image's content of the writable
directories (it is seeded ahead of time, like an agent's container). The agent's final state
then reaches it as a difference: the snapshot's members that are not byte for byte and attribute
for attribute what the container already holds, and the pristine paths the agent removed or
turned into something else. Members are compared by everything a test could observe through the
filesystem -- type, mode, owner, modification time, size, link target, device numbers and a
SHA-256 of the content -- so an agent that restores a file's mtime after editing it still has the
edited file sent. A false "changed" costs bytes; nothing here can make a changed member pass for
an unchanged one short of a SHA-256 collision.

Both sides are tar archives made by the same ``tar -c`` command (the pristine one from a freshly
seeded container), so the comparison never depends on how two archivers encode the same file.
The members sent are byte ranges of the snapshot file itself (headers included), so what the
test container unpacks is exactly what the snapshot recorded. Such archives are in GNU tar's own
format, which a small scanner here reads twice as fast as tarfile (it is on every trial's path);
anything else it hands to tarfile, and both give the same signatures.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A member's observable identity: (type, mode, uid, gid, mtime, size, link target, device, sha256).
Signature = tuple[Any, ...]

_END_OF_ARCHIVE = b"\0" * (2 * tarfile.BLOCKSIZE)


def _signature(archive: tarfile.TarFile, member: tarfile.TarInfo) -> Signature:
    digest = ""
    if member.isreg():
        content = archive.extractfile(member)
        if content is not None:
            hasher = hashlib.sha256()
            while chunk := content.read(1 << 20):
                hasher.update(chunk)
            digest = hasher.hexdigest()
    kind = "file" if member.isreg() else member.type
    device = (member.devmajor, member.devminor) if member.ischr() or member.isblk() else ()
    return (kind, member.mode, member.uid, member.gid, int(member.mtime), member.size, member.linkname, device, digest)


@dataclass(frozen=True)
class _Member:
    name: str
    signature: Signature
    start: int  # offset of its first header block in the archive
    end: int  # offset just past its data's padding
    is_dir: bool
    is_hardlink: bool


@dataclass(frozen=True)
class StateIndex:
    """Every member of one tar archive, in archive order, with its signature and byte range."""

    members: tuple[_Member, ...]
    size: int  # bytes up to the end of the last member

    @classmethod
    def read(cls, source: Path | bytes) -> StateIndex:
        data = source if isinstance(source, bytes) else source.read_bytes()
        scanned = _scan_gnu(data)
        return scanned if scanned is not None else cls._read_with_tarfile(data)

    @classmethod
    def _read_with_tarfile(cls, data: bytes) -> StateIndex:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            found: list[tuple[tarfile.TarInfo, Signature]] = [(m, _signature(archive, m)) for m in archive]
            end = archive.offset
        members = []
        for position, (member, signature) in enumerate(found):
            stop = found[position + 1][0].offset if position + 1 < len(found) else end
            members.append(
                _Member(
                    name=member.name.rstrip("/"),
                    signature=signature,
                    start=member.offset,
                    end=stop,
                    is_dir=member.isdir(),
                    is_hardlink=member.islnk(),
                )
            )
        return cls(members=tuple(members), size=end)

    def names(self) -> set[str]:
        return {m.name for m in self.members}

    def manifest(self) -> dict[str, Signature]:
        return {m.name: m.signature for m in self.members}


# What GNU tar writes for the files of a tmpfs: regular files, hard links, symlinks, devices,
# directories, FIFOs, and the long-name / long-link headers before a member.
_PLAIN_TYPES = frozenset(b"0\x00123456")
_LONG_NAME, _LONG_LINK = ord("L"), ord("K")
_GNU_MAGIC = b"ustar  \x00"


def _octal(field: bytes) -> int:
    digits = field.split(b"\x00", 1)[0].strip(b" ")
    return int(digits, 8) if digits else 0


def _text(field: bytes) -> str:
    return field.split(b"\x00", 1)[0].decode("utf-8", "surrogateescape")


def _scan_gnu(data: bytes) -> StateIndex | None:
    """``StateIndex.read`` for an archive in the format ``tar -c`` writes by default (GNU), several
    times faster than tarfile, with the same signatures; None for anything else (pax headers,
    sparse files, base-256 numbers, a bad checksum), which tarfile then reads."""
    view = memoryview(data)
    members: list[_Member] = []
    position = 0
    while position + tarfile.BLOCKSIZE <= len(data):
        start = position
        long_name = long_link = None
        while True:
            header = data[position : position + tarfile.BLOCKSIZE]
            if header.count(0) == tarfile.BLOCKSIZE:
                return StateIndex(members=tuple(members), size=start) if start == position else None
            if header[257:265] != _GNU_MAGIC or any(header[f] & 0x80 for f in (100, 108, 116, 124, 136)):
                return None
            try:
                if _octal(header[148:156]) != sum(header) - sum(header[148:156]) + 8 * 32:
                    return None
                size = _octal(header[124:136])
            except ValueError:
                return None
            kind = header[156]
            if kind in (_LONG_NAME, _LONG_LINK):
                text = _text(data[position + tarfile.BLOCKSIZE : position + tarfile.BLOCKSIZE + size])
                if kind == _LONG_NAME:
                    long_name = text
                else:
                    long_link = text
                position += tarfile.BLOCKSIZE + -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
                continue
            if kind not in _PLAIN_TYPES:
                return None
            break
        try:
            mode, uid, gid, mtime = (_octal(header[a:b]) for a, b in ((100, 108), (108, 116), (116, 124), (136, 148)))
            device = (_octal(header[329:337]), _octal(header[337:345])) if kind in b"34" else ()
        except ValueError:
            return None
        name = long_name if long_name is not None else _text(header[0:100])
        linkname = long_link if long_link is not None else _text(header[157:257])
        is_dir = kind == ord("5") or (kind == 0 and name.endswith("/"))
        is_reg = kind in b"0\x00" and not is_dir
        position += tarfile.BLOCKSIZE
        digest = ""
        if is_reg:
            digest = hashlib.sha256(view[position : position + size]).hexdigest()
            position += -(-size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
            if position > len(data):
                return None
        # The signature exactly as _signature builds it from tarfile's member.
        type_ = "file" if is_reg else (tarfile.DIRTYPE if is_dir else bytes([kind]))
        signature = (type_, mode, uid, gid, mtime, size, linkname, device, digest)
        members.append(_Member(name.rstrip("/"), signature, start, position, is_dir, kind == ord("1")))
    return None


@dataclass(frozen=True)
class StateDiff:
    """What turns a container holding the pristine content into one holding the final state."""

    ranges: tuple[tuple[int, int], ...]  # (start, end) byte ranges of the snapshot, in order
    deletions: tuple[str, ...]  # absolute paths to remove first (recursively), none below another
    full: bool  # every member is sent (the deletions then empty the pristine directories)

    @property
    def sent_bytes(self) -> int:
        return sum(end - start for start, end in self.ranges) + len(_END_OF_ARCHIVE)


def _ancestors(name: str) -> Iterable[str]:
    parent = posixpath.dirname(name)
    while parent:
        yield parent
        parent = posixpath.dirname(parent)


def _topmost(paths: Iterable[str]) -> list[str]:
    """The paths that are not below another of them, sorted."""
    chosen: set[str] = set()
    for path in sorted(paths, key=lambda p: (p.count("/"), p)):
        if not any(a in chosen for a in _ancestors(path)):
            chosen.add(path)
    return sorted(chosen)


def state_diff(
    index: StateIndex, pristine: Mapping[str, Signature], roots: Iterable[str], max_deletion_bytes: int
) -> StateDiff:
    """The difference between the pristine content (``pristine``: name -> signature, names relative
    to "/") and the final state ``index``. ``roots``: the writable mounts (relative), never deleted.

    Over ``max_deletion_bytes`` of paths to delete (they travel as command arguments), the diff
    falls back to emptying the pristine directories and sending every member.
    """
    roots = set(roots)
    final = {m.name: m for m in index.members}
    removed = [
        name
        for name, signature in pristine.items()
        if name not in roots and (name not in final or final[name].signature[0] != signature[0])
    ]
    deletions = _topmost(removed)
    if sum(len(d) + 2 for d in deletions) > max_deletion_bytes:
        every = _topmost(name for name in pristine if name not in roots)
        return StateDiff(ranges=((0, index.size),), deletions=tuple("/" + d for d in every), full=True)
    # Hard links always go: their target may be a member that is sent, or one that stays.
    changed = {m.name for m in index.members if m.is_hardlink or pristine.get(m.name) != m.signature}
    # A directory's mtime moves when an entry inside it is created or removed: the directories
    # holding what changes are sent too, so that tar sets their attributes back afterwards.
    wanted = set(changed)
    for name in [*changed, *deletions]:
        wanted.update(_ancestors(name))
    ranges: list[tuple[int, int]] = []
    for member in index.members:
        if member.name in wanted:
            if ranges and ranges[-1][1] == member.start:
                ranges[-1] = (ranges[-1][0], member.end)
            else:
                ranges.append((member.start, member.end))
    return StateDiff(ranges=tuple(ranges), deletions=tuple("/" + d for d in deletions), full=False)


class RangeReader(io.RawIOBase):
    """A tar archive made of byte ranges of a file, then the end-of-archive blocks."""

    def __init__(self, path: Path, ranges: Iterable[tuple[int, int]]) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed with this reader
        self._ranges = list(ranges)
        self._tail = _END_OF_ARCHIVE
        self._left = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while self._left == 0 and self._ranges:
            start, end = self._ranges.pop(0)
            self._file.seek(start)
            self._left = end - start
        if self._left:
            data = self._file.read(min(len(target), self._left))
            if not data:
                raise EOFError("the snapshot file is shorter than its index")
            self._left -= len(data)
        else:
            data, self._tail = self._tail[: len(target)], self._tail[len(target) :]
        target[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._file.close()
        super().close()
