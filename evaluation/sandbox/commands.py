"""``CommandSandbox``: a sandbox's file operations and exec bookkeeping on one primitive, ``_run``,
which each backend implements with this signature; and what that primitive returns (``RawResult``,
its output bounded by ``OutputCollector``) turned into an ``ExecResult``."""

from __future__ import annotations

import pathlib
import threading
from abc import abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Protocol

from .archives import build_tar, open_archive
from .environment import (
    BASH,
    INTERNAL_TIMEOUT,
    MAX_OUTPUT_BYTES,
    SH,
    TAR,
    Environment,
    ExecResult,
    SandboxError,
    normalize_sandbox_path,
)
from .interface import Sandbox
from .verifier import VERIFIER_ENV, audited, verifier_argv

# Exit status used by our own helper scripts to say "no such file".
_MISSING_FILE_STATUS = 3


class OutputCollector:
    """Accumulates one output stream up to MAX_OUTPUT_BYTES, dropping (but counting) the rest."""

    def __init__(self, limit: int | None = MAX_OUTPUT_BYTES) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        self._dropped = 0
        self._limit = limit

    def add(self, chunk: bytes) -> None:
        if self._limit is None:
            self._chunks.append(chunk)
            return
        room = self._limit - self._size
        if room > 0:
            self._chunks.append(chunk[:room])
            self._size += min(room, len(chunk))
        self._dropped += max(0, len(chunk) - max(room, 0))

    @property
    def dropped(self) -> int:
        return self._dropped

    def data(self) -> bytes:
        return b"".join(self._chunks)


class ByteSink(Protocol):
    """Where a command's stdout can go instead of into its result: an open file, a gzip writer."""

    def write(self, data: bytes, /) -> object: ...


@dataclass
class RawResult:
    """Outcome of a backend-internal command (bytes, no timeout bookkeeping for callers)."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    duration: float
    stdout_dropped: int = 0
    stderr_dropped: int = 0


class CommandSandbox(Sandbox):
    """Implements the file operations and exec bookkeeping on top of one primitive, ``_run``.

    Files are moved as tar streams through a command run *inside* the sandbox. The
    host never opens a path in the sandbox's writable area itself, so symlinks or
    other tricks left by the agent cannot redirect a host-side read or write.
    """

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self._lock = threading.RLock()
        self._destroyed = False

    # -- the primitive -------------------------------------------------------
    @abstractmethod
    def _run(
        self,
        argv: list[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | IO[bytes] | None = None,
        output_limit: int | None = MAX_OUTPUT_BYTES,
        stdout_to: ByteSink | None = None,
    ) -> RawResult:
        """Run argv inside; kill every process inside when it ends or times out.

        ``stdout_to``: the command's stdout is written there as it comes (a snapshot's tar,
        whatever its size) and the result's ``stdout`` stays empty."""

    # -- helpers -------------------------------------------------------------
    def _check_alive(self) -> None:
        if self._destroyed:
            raise SandboxError("sandbox already destroyed")

    def _resolve(self, path: str) -> str:
        return normalize_sandbox_path(path, self.workdir)

    def unpack_archive(self, path: pathlib.Path) -> None:
        """Unpack a final-state archive (``Snapshot.export``) into this fresh sandbox.

        Decompressed on the host (our own file), unpacked inside by the sandbox's tar, so tar
        never runs gzip from the sandbox's PATH; numeric owners are kept (setuid bits too)."""
        with open_archive(path) as archive:
            self._put_tar(archive, f"archive {path.name}", ["--numeric-owner"])

    def _put_tar(self, data: bytes | IO[bytes], what: str, options: Iterable[str] = ()) -> None:
        # --no-same-owner would map to the caller; inside, the caller is root, and
        # archives we build are root-owned, so the default keeps ownership.
        result = self._run(
            [TAR, "-x", "-p", *options, "-C", "/", "-f", "-"],
            timeout=INTERNAL_TIMEOUT,
            cwd="/",  # the workdir may not exist yet
            stdin=data,
            output_limit=64 * 1024,
        )
        if result.exit_code != 0:
            detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
            raise SandboxError(f"cannot write {what}: {detail or f'tar exited {result.exit_code}'}")

    # -- public API ----------------------------------------------------------
    def exec(
        self,
        command: str,
        timeout: float,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        with self._lock:
            self._check_alive()
            directory = self._resolve(cwd) if cwd else self.workdir
            raw = self._run(self._exec_argv([BASH, "-c", command]), timeout=timeout, env=env, cwd=directory)
        return exec_result(raw)

    def _exec_argv(self, argv: list[str]) -> list[str]:
        """How an ``exec`` command starts; a model-mode sandbox starts the forwarder beside it.
        (Internal operations, file transfer and snapshots, call ``_run`` directly.)"""
        return argv

    def _verify(self, module: str, timeout: float) -> ExecResult:
        """Run the verifier on ``module`` (a path under TESTS_MOUNT) from the workdir."""
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        with self._lock:
            self._check_alive()
            raw = self._run(verifier_argv(module), timeout=timeout, env=VERIFIER_ENV, cwd=self.workdir)
        return audited(exec_result(raw))

    def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        target = self._resolve(path)
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        with self._lock:
            self._check_alive()
            self._put_tar(build_tar([(target, data, mode)]), target)

    def read_file(self, path: str) -> bytes:
        target = self._resolve(path)
        # -f follows symlinks: a link to /dev/zero is refused, not read forever.
        script = (
            f'[ -e "$1" ] || exit {_MISSING_FILE_STATUS}; '
            '[ -f "$1" ] || { echo "not a regular file" >&2; exit 4; }; exec /bin/cat -- "$1"'
        )
        with self._lock:
            self._check_alive()
            result = self._run([SH, "-c", script, "sh", target], timeout=INTERNAL_TIMEOUT, cwd="/", output_limit=None)
        if result.exit_code == _MISSING_FILE_STATUS:
            raise FileNotFoundError(f"{target} does not exist in the sandbox")
        if result.exit_code != 0:
            detail = result.stderr.decode("utf-8", "replace").strip()
            raise SandboxError(f"cannot read {target}: {detail or f'exit {result.exit_code}'}")
        return result.stdout

    def _apply_environment(
        self, environment: Environment, setup_timeout: float, extra: Mapping[str, bytes] | None = None
    ) -> None:
        """Write the environment's files (and the workdir) then run its setup script.

        ``extra`` holds backend-provided files (absolute path -> bytes) written first.
        """
        entries: list[tuple[str, bytes | None, int]] = [(self.workdir, None, 0o755)]
        entries += [(p, c, 0o644) for p, c in (extra or {}).items()]
        entries += [(p, c.encode("utf-8"), 0o644) for p, c in environment.resolved_files().items()]
        with self._lock:
            self._put_tar(build_tar(entries), "the environment's files")
            if environment.setup.strip():
                result = self.exec(environment.setup, setup_timeout)
                if not result.ok:
                    status = "timed out" if result.timed_out else f"exited {result.exit_code}"
                    raise SandboxError(
                        f"environment setup {status}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
                    )


def exec_result(raw: RawResult) -> ExecResult:
    return ExecResult(
        exit_code=None if raw.timed_out else raw.exit_code,
        stdout=_decode(raw.stdout, raw.stdout_dropped),
        stderr=_decode(raw.stderr, raw.stderr_dropped),
        timed_out=raw.timed_out,
        duration=raw.duration,
    )


def _decode(data: bytes, dropped: int) -> str:
    text = data.decode("utf-8", errors="replace")
    if dropped:
        text += f"\n[... {dropped} more bytes of output dropped by the sandbox ...]\n"
    return text
