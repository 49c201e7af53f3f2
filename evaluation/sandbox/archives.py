"""Final-state archives on the host: a sandbox's tar stream compressed under a size cap, read back,
and the small root-owned tars the backends unpack inside a sandbox."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import pathlib
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from .environment import SandboxError


class ArchiveTooLarge(SandboxError):
    """A final-state archive grew past its cap; nothing was kept."""

    def __init__(self, size: int, max_bytes: int) -> None:
        super().__init__(f"the archive reached {size} bytes, over the {max_bytes}-byte cap")
        self.size = size
        self.max_bytes = max_bytes


@dataclass(frozen=True)
class ArchiveInfo:
    """A final-state archive on the host: sha256 and size of the compressed file."""

    sha256: str
    size: int


class _CappedFile(io.RawIOBase):
    """Writes to a host file, hashing, and raises ArchiveTooLarge past max_bytes."""

    def __init__(self, target: IO[bytes], max_bytes: int) -> None:
        self._target = target
        self._max = max_bytes
        self.size = 0
        self.digest = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.size += len(chunk)
        if self.size > self._max:
            raise ArchiveTooLarge(self.size, self._max)
        self.digest.update(chunk)
        self._target.write(chunk)
        return len(chunk)


class GzipArchiveWriter:
    """Compresses a tar stream into a host file under a size cap.

    The sink side of an export: the tar itself is always produced by a command in a
    sandbox (or is a snapshot file made that way), never by the host walking the
    agent's files. Deterministic output (no name, mtime 0) so that equal states give
    equal sha256s. After an overflow it keeps accepting (and dropping) data so that
    the producer can finish; ``finish`` then removes the file and raises.
    """

    def __init__(self, path: pathlib.Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._file = open(path, "wb")  # noqa: SIM115 - closed in finish/abort
        self._capped = _CappedFile(self._file, max_bytes)
        self._gzip: gzip.GzipFile | None = gzip.GzipFile(
            filename="",
            mode="wb",
            fileobj=self._capped,
            mtime=0,
            compresslevel=6,
        )
        self.overflow: ArchiveTooLarge | None = None

    def write(self, data: bytes) -> int:
        if self.overflow is None and self._gzip is not None:
            try:
                self._gzip.write(data)
            except ArchiveTooLarge as exc:
                self.overflow = exc
        return len(data)

    def abort(self) -> None:
        if self._gzip is not None:
            # Without a file object the GzipFile's own close (and finalizer) writes nothing.
            self._gzip.fileobj = None  # type: ignore[assignment]
            self._gzip = None
        with contextlib.suppress(Exception):
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def finish(self) -> ArchiveInfo:
        if self.overflow is None and self._gzip is not None:
            try:
                self._gzip.close()
            except ArchiveTooLarge as exc:
                self.overflow = exc
        if self.overflow is not None:
            self.abort()
            raise self.overflow
        self._gzip = None
        self._file.close()
        return ArchiveInfo(sha256=self._capped.digest.hexdigest(), size=self._capped.size)


def export_tar_file(source: pathlib.Path, path: pathlib.Path, max_bytes: int) -> ArchiveInfo:
    """Compress a snapshot tar the backend made into ``path`` under the cap."""
    writer = GzipArchiveWriter(path, max_bytes)
    try:
        with open(source, "rb") as tar:
            while writer.overflow is None and (chunk := tar.read(1024 * 1024)):
                writer.write(chunk)
    except BaseException:
        writer.abort()
        raise
    return writer.finish()


def open_archive(path: pathlib.Path) -> IO[bytes]:
    """The tar stream inside a final-state archive, decompressed on the host."""
    try:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    except OSError as exc:
        raise SandboxError(f"cannot open archive {path}: {exc}") from exc


def build_tar(entries: Iterable[tuple[str, bytes | None, int]]) -> bytes:
    """A tar archive of (absolute sandbox path, content or None for a directory, mode).

    Members are stored relative to "/" and owned by root, to be unpacked with
    ``tar -x -C /`` *inside* the sandbox: unpacking on the host side could follow
    symlinks the agent planted and write outside the sandbox.
    """
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for path, content, mode in entries:
            info = tarfile.TarInfo(path.lstrip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = now
            info.mode = mode
            if content is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()
