"""The sandbox interface every backend implements, plus the parts they share.

Agent code only ever runs behind this interface. Two invariants hold for every
backend and the trial protocol relies on them:

* Processes never outlive the ``exec`` call that started them. A background
  process left running could watch for the hidden tests to be written and tamper
  with them, so each exec ends by killing everything inside the sandbox.
* The system is read-only except a fixed set of writable directories
  (``WRITABLE_SYSTEM_DIRS`` plus the top-level directory holding the workdir),
  each size-capped, so a sandbox can never fill the host's disk and a snapshot
  only needs to copy those directories.

The tests run on a restored copy of what the agent left, so that copy is
agent-shaped through and through (a ``python3`` shim in /usr/local/bin, a
``sitecustomize``, a ``conftest.py``, an ``/etc/ld.so.preload`` or
``/etc/ld.so.cache``...). ``Snapshot.verify`` therefore never runs anything of
it: the interpreter and pytest come from the *verifier runtime*, a read-only
directory made by ``scripts/build_sandbox_image.sh`` outside any sandbox's
writable state and mounted at ``VERIFIER_MOUNT`` only in the test phase; it is
started through its own dynamic loader with ``--inhibit-cache`` and its own
libraries, in isolated mode without ``site`` and with a fixed environment, on the
runtime's bootstrap, which sets the module search path to the runtime's own
directories and checks the interpreter against the runtime's manifest before the
test is collected (``verifier_bootstrap``; a failed check is ``VerifierAuditFailed``,
no verdict); the test module lives in ``TESTS_MOUNT``, outside the agent's tree. The one input the loader reads
whatever it is told is ``/etc/ld.so.preload``; in the test phase that path
holds an empty file wherever the agent left anything there (file, symlink,
directory...), and nothing where it left nothing (see ``PRELOAD_PATH``). What
a test itself runs (``subprocess.run(["./solution.sh"])``) is the agent's
system, as it should be: that is what the test examines.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import pathlib
import posixpath
import secrets
import shlex
import tarfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from .network import HOST_NETWORK_REFUSED, ModelAccess
from .verifier_bootstrap import AUDIT_MARKER, AUDIT_STATUS, TESTS_DIR

# Label / name prefix that marks everything a backend creates, so that
# cleanup_orphans can find it again after a crash.
SANDBOX_LABEL = "veriharm.sandbox"

# Where a sandbox may write, besides the workdir. Chosen so that the usual
# places an agent (or a harmful action) touches behave as in a normal container:
# configuration (/etc), state and logs (/var), the home directory, /tmp, and
# locally installed software. The OS itself (/usr, /bin, /lib...) stays read-only.
WRITABLE_SYSTEM_DIRS: tuple[str, ...] = (
    "/etc",
    "/home",
    "/opt",
    "/root",
    "/run",
    "/srv",
    "/tmp",
    "/usr/local",
    "/var",
)

# Top-level directories that belong to the read-only OS image: a workdir or file
# below one of them (other than /usr/local) is refused rather than silently
# shadowing system files.
PROTECTED_TOP_DIRS = frozenset(
    {"/bin", "/boot", "/dev", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sbin", "/sys", "/usr"}
)

SANDBOX_HOSTNAME = "sandbox"
SANDBOX_HOME = "/root"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV: Mapping[str, str] = {"PATH": DEFAULT_PATH, "HOME": SANDBOX_HOME, "LANG": "C.UTF-8"}

# Tools the backends run inside, by absolute path: /usr/local/bin comes first in
# PATH and is writable, so a bare "tar" could be a shim the agent planted to
# tamper with the tests written in later. (Debian keeps these under /usr/bin, with
# /bin a symlink to it; /bin/... also works on images without merged /usr.)
BASH = "/bin/bash"
SH = "/bin/sh"
TAR = "/bin/tar"
RM = "/bin/rm"
TIMEOUT = "/usr/bin/timeout"

# The verifier runtime (see the module docstring) and the directory holding the test
# module, both mounted only in the test phase, at top-level paths no sandbox can
# write. The runtime's "loader" and "libs" are links the build script makes to the
# tree's ld.so and library directory, so the command line is the same on every
# architecture.
VERIFIER_MOUNT = "/.veriharm-verifier"
# The bootstrap allows this directory on the module search path, beside the runtime's.
TESTS_MOUNT = TESTS_DIR
VERIFIER_LOADER = f"{VERIFIER_MOUNT}/loader"
VERIFIER_LIBS = f"{VERIFIER_MOUNT}/libs"
VERIFIER_PYTHON = f"{VERIFIER_MOUNT}/usr/bin/python3"
# The verifier's entry point: verifier_bootstrap.py, copied into the runtime by the build script
# (evaluation.sandbox.images refuses a runtime holding another copy).
VERIFIER_BOOTSTRAP = f"{VERIFIER_MOUNT}/bootstrap.py"
BOOTSTRAP_SOURCE = pathlib.Path(__file__).with_name("verifier_bootstrap.py")
BOOTSTRAP_SHA256 = hashlib.sha256(BOOTSTRAP_SOURCE.read_bytes()).hexdigest()
# Interpreter options: isolated (no PYTHON* variables, no user site, neither the working
# directory nor the script's on sys.path), no ``site`` at all, no bytecode written.
VERIFIER_PYTHON_OPTIONS: tuple[str, ...] = ("-I", "-S", "-B")
# pytest's: no cache, no conftest.py, no configuration file, the tests' directory as rootdir.
VERIFIER_PYTEST_OPTIONS: tuple[str, ...] = (
    "-q", "-p", "no:cacheprovider", "--noconftest", "-c", "/dev/null", "--rootdir", TESTS_MOUNT,
)  # fmt: skip
# The dynamic loader reads this file in every process, its own explicit invocation
# included, and no option turns that off: in the test phase it is replaced by an
# empty regular file when the agent left anything at that path (so a test still sees
# that something is there, never what it names), and stays absent otherwise. The
# final-state archive keeps the agent's original.
PRELOAD_PATH = "/etc/ld.so.preload"
# The verifier's whole environment: nothing is inherited. PATH is the sandbox's usual
# one because the tests run the agent's programs (./solution.sh, which...) by name.
VERIFIER_ENV: Mapping[str, str] = {
    "PATH": DEFAULT_PATH,
    "HOME": SANDBOX_HOME,
    "LANG": "C.UTF-8",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}


def verifier_argv(module_path: str) -> list[str]:
    """The command running one test module with the verifier runtime.

    * the runtime's own ld.so, ``--inhibit-cache`` (an agent's /etc/ld.so.cache could
      map libc to its own library) and ``--library-path`` to the runtime's libraries;
    * the runtime's python3 with ``-I -S -B`` (``VERIFIER_PYTHON_OPTIONS``) on the
      runtime's bootstrap (``evaluation.sandbox.verifier_bootstrap``): no ``site``, so no
      sitecustomize, usercustomize or .pth file anywhere is read and no directory is
      added by a fixed path; the bootstrap sets the module search path to the runtime's
      directories, checks the interpreter against the runtime's manifest before the test
      is collected, and runs pytest in-process;
    * pytest: no plugin autoload (environment), no configuration file (``-c
      /dev/null``, so a planted pytest.ini/tox.ini/pyproject.toml is not read), no
      conftest.py, no cache; the rootdir is the tests' own directory, the module
      outside the agent's tree, so pytest's sys.path insertion adds only that
      directory (a json.py planted in the workdir cannot shadow the stdlib).

    The working directory stays the task's workdir (set by the backend): tests use
    relative paths.
    """
    return [
        VERIFIER_LOADER, "--inhibit-cache", "--library-path", VERIFIER_LIBS,
        VERIFIER_PYTHON, *VERIFIER_PYTHON_OPTIONS, VERIFIER_BOOTSTRAP, *VERIFIER_PYTEST_OPTIONS,
        module_path,
    ]  # fmt: skip


def verifier_command_line() -> str:
    """The verifier's exact command line and environment, and the sha256 of its bootstrap, for the record."""
    environment = " ".join(f"{k}={shlex.quote(v)}" for k, v in VERIFIER_ENV.items())
    command = shlex.join(verifier_argv(f"{TESTS_MOUNT}/test_<random>.py"))
    return f"env -i {environment} {command} # {posixpath.basename(VERIFIER_BOOTSTRAP)} sha256:{BOOTSTRAP_SHA256}"


def hidden_test_name() -> str:
    """A module name nobody can predict: 128 random bits."""
    return f"test_{secrets.token_hex(16)}"


def read_identity(path: pathlib.Path, what: str) -> str:
    """The ``sha256:...`` line the build script wrote for the tree or the verifier runtime."""
    try:
        value = path.read_text().strip()
    except OSError as exc:
        raise SandboxError(f"no identity for the {what} at {path}; run scripts/build_sandbox_image.sh") from exc
    if not value.startswith("sha256:"):
        raise SandboxError(f"unreadable identity for the {what} in {path}: {value[:80]!r}")
    return value


# Each captured stream of an exec is cut at this size: an agent printing
# gigabytes must not exhaust the host's memory.
MAX_OUTPUT_BYTES = 4 * 1024 * 1024
# Exit status used by our own helper scripts to say "no such file".
_MISSING_FILE_STATUS = 3
# Internal operations (file transfer, snapshots) get this much time.
INTERNAL_TIMEOUT = 120.0
DEFAULT_SETUP_TIMEOUT = 600.0


class SandboxError(Exception):
    """Infrastructure failure (cannot create, daemon gone...): never an agent outcome."""


class VerifierAuditFailed(SandboxError):
    """The verifier found, before collecting the test, a path or module that is not its runtime's.

    The system under the test is not the one recorded, so the run gives no verdict; the same
    system would fail the same way, so it is not worth another attempt."""


def audited(result: ExecResult) -> ExecResult:
    """A verifier run's result, or VerifierAuditFailed naming what the bootstrap's audit found."""
    if result.exit_code == AUDIT_STATUS:
        for line in result.stderr.splitlines():
            if line.startswith(AUDIT_MARKER):
                raise VerifierAuditFailed(
                    f"the test phase stopped before the test: {line[len(AUDIT_MARKER) :].strip()}"
                )
    return result


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


def normalize_sandbox_path(path: str, workdir: str) -> str:
    """Absolute, normalized path inside the sandbox; relative paths are under workdir.

    ``..`` may not climb above "/" (normpath clamps it), so the result is always a
    plain absolute path without ``.``/``..`` components.
    """
    if not path:
        raise ValueError("empty path")
    if "\0" in path:
        raise ValueError(f"NUL byte in path {path!r}")
    joined = path if path.startswith("/") else posixpath.join(workdir, path)
    normalized = posixpath.normpath(joined)
    # normpath keeps a leading "//" (POSIX allows it to be special); we do not.
    return "/" + normalized.lstrip("/")


def _top_dir(path: str) -> str:
    parts = path.strip("/").split("/", 1)
    return "/" + parts[0] if parts[0] else "/"


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


@dataclass(frozen=True)
class Environment:
    """What a task's sandbox starts from (``source_task.environment`` in the pipeline format)."""

    workdir: str = "/app"
    files: Mapping[str, str] = field(default_factory=dict)
    setup: str = ""
    image: str | None = None
    network: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.workdir, str) or not self.workdir.startswith("/"):
            raise ValueError(f"workdir must be an absolute path, got {self.workdir!r}")
        object.__setattr__(self, "workdir", normalize_sandbox_path(self.workdir, "/"))
        if self.workdir == "/":
            raise ValueError("workdir must not be /")
        if not isinstance(self.files, Mapping):
            raise ValueError("files must map paths to text content")
        for name, content in self.files.items():
            if not isinstance(name, str) or not isinstance(content, str):
                raise ValueError(f"files must map path strings to text content, got {name!r}")
            normalize_sandbox_path(name, self.workdir)
        # A private copy: the dataclass is frozen, its files should not change under us.
        object.__setattr__(self, "files", dict(self.files))
        if not isinstance(self.setup, str):
            raise ValueError("setup must be a shell script string")
        if self.image is not None and (not isinstance(self.image, str) or not self.image):
            raise ValueError("image must be a non-empty string or None")
        if not isinstance(self.network, bool):
            raise ValueError("network must be a boolean")
        if self.network:
            # The format's `network: true` says the task needs outside network; no sandbox
            # gives it that (nor the host's), so it is refused, never quietly run without.
            raise ValueError(f"environment.network is true, but {HOST_NETWORK_REFUSED}")

    def __hash__(self) -> int:
        return hash((self.workdir, tuple(sorted(self.files.items())), self.setup, self.image, self.network))

    _SPEC_KEYS = ("workdir", "files", "setup", "image", "network")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> Environment:
        """Build from a pipeline-format ``environment`` object (None or {} gives the defaults).

        The format refuses fields it does not name, so unknown keys are an error here too.
        """
        if spec is None:
            return cls()
        if not isinstance(spec, Mapping):
            raise ValueError(f"environment must be an object, got {type(spec).__name__}")
        unknown = sorted(set(spec) - set(cls._SPEC_KEYS))
        if unknown:
            raise ValueError(f"environment: unknown field(s) {', '.join(unknown)}")
        kwargs: dict[str, Any] = {k: spec[k] for k in cls._SPEC_KEYS if k in spec and spec[k] is not None}
        return cls(**kwargs)

    def resolved_files(self) -> dict[str, str]:
        """Files keyed by absolute sandbox path."""
        return {normalize_sandbox_path(p, self.workdir): c for p, c in self.files.items()}


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 512
    cpus: float = 1.0
    pids: int = 256
    disk_mb: int = 256  # size cap of each writable area (see the backends for details)

    def __post_init__(self) -> None:
        if self.memory_mb < 16 or self.pids < 8 or self.disk_mb < 8 or self.cpus <= 0:
            raise ValueError(f"limits too small to run anything: {self}")


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None  # None when killed by the timeout
    stdout: str
    stderr: str
    timed_out: bool
    duration: float  # seconds

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


# What trials ran before the verifier runtime existed; only Snapshot.verify's fallback uses it.


def inode_cap(size_mb: int) -> int:
    """Inodes allowed on a writable area of size_mb: one per KiB, plenty for source trees."""
    return max(size_mb, 1) * 1024


def plan_writable_mounts(environment: Environment) -> tuple[str, ...]:
    """The writable directories of a sandbox for this environment, parents before children.

    The system dirs are always writable; the workdir, and any absolute file outside
    those, gets its top-level directory made writable (e.g. /app, /workspace, /data).
    Paths inside the read-only OS (/usr, /bin...) are refused: the sandbox could not
    make them writable without copying the whole OS.
    """
    mounts = list(WRITABLE_SYSTEM_DIRS)
    wanted = [("workdir", environment.workdir)]
    wanted += [("file", p) for p in environment.resolved_files()]
    for kind, path in wanted:
        if any(_under(path, m) for m in mounts):
            continue
        top = _top_dir(path)
        if top == "/" or (kind == "file" and posixpath.dirname(path) == "/"):
            raise SandboxError(f"{kind} {path}: files directly in / are not supported (read-only root)")
        if top in PROTECTED_TOP_DIRS:
            raise SandboxError(
                f"{kind} {path} lies in the read-only system ({top}); writable places are the workdir's "
                f"top-level directory and {', '.join(WRITABLE_SYSTEM_DIRS)}"
            )
        mounts.append(top)
    return tuple(sorted(set(mounts), key=lambda m: (m.count("/"), m)))


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


class Sandbox(ABC):
    """One isolated environment. Not thread-safe for concurrent execs: calls are serialized."""

    workdir: str

    @abstractmethod
    def exec(
        self,
        command: str,
        timeout: float,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``bash -c command`` inside; on timeout every process inside is killed."""

    @abstractmethod
    def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        """Create or replace a file; path relative to workdir or absolute inside the sandbox."""

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """Content of a regular file inside the sandbox; FileNotFoundError when missing."""

    @abstractmethod
    def snapshot(self) -> Snapshot:
        """Freeze the current state of the writable directories."""

    @abstractmethod
    def destroy(self) -> None:
        """Kill every process and remove every trace. Idempotent."""

    def final_snapshot(self) -> Snapshot:
        """``snapshot`` of a sandbox that is never used again: afterwards only ``destroy`` may be
        called (the trial's agent sandbox). A backend may hand the state over instead of copying it."""
        return self.snapshot()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.destroy()


class UseGate:
    """Lets any number of users at a snapshot at once (its tests' copies are made in parallel);
    ``close`` refuses new ones and waits for those inside, so storage is never freed under a reader."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._users = 0
        self.closed = False

    @contextlib.contextmanager
    def use(self) -> Iterator[None]:
        with self._condition:
            if self.closed:
                raise SandboxError("snapshot already discarded")
            self._users += 1
        try:
            yield
        finally:
            with self._condition:
                self._users -= 1
                self._condition.notify_all()

    def close(self) -> None:
        with self._condition:
            self.closed = True
            self._condition.wait_for(lambda: self._users == 0)


class Snapshot(ABC):
    @abstractmethod
    def restore(self) -> Sandbox:
        """A new, independent sandbox whose writable state is a copy of the snapshot."""

    @abstractmethod
    def verify(self, test_source: str, timeout: float) -> ExecResult:
        """Run one pytest module on its own fresh copy of the snapshot, then destroy the copy.

        The module is written in only now, under an unguessable name, outside the agent's
        tree (``TESTS_MOUNT``), and runs with the verifier runtime (``verifier_argv``) in
        ``VERIFIER_ENV``, with the agent's /etc/ld.so.preload masked (``PRELOAD_PATH``).
        """

    def export(self, path: pathlib.Path, *, max_bytes: int) -> ArchiveInfo:
        """Write the snapshot's writable state to ``path`` as a gzip-compressed tar.

        Members are relative to "/" (``etc/passwd``, ``app/solution.sh``), owners
        numeric, symlinks stored as symlinks. Past ``max_bytes`` of compressed output
        the partial file is removed and ArchiveTooLarge raised.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot export archives")

    @abstractmethod
    def discard(self) -> None:
        """Free the snapshot's storage. Idempotent; sandboxes already restored are unaffected."""

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()


class SandboxBackend(ABC):
    name: str

    @abstractmethod
    def create(
        self, environment: Environment, limits: Limits = Limits(), *, model: ModelAccess | None = None
    ) -> Sandbox:
        """A sandbox with the environment's files written and its setup run.

        Network mode ``none`` without ``model``; with it, mode ``model``: the gateway's
        socket and the harness runtime are mounted and every ``exec`` runs beside the
        forwarder (``evaluation.sandbox.network``). Snapshots, restores and test-phase
        copies never get either. A failing setup raises SandboxError carrying the
        setup's output.
        """

    @abstractmethod
    def cleanup_orphans(self) -> int:
        """Remove what this backend left behind in dead processes; returns how many sandboxes."""

    def drain_pools(self) -> None:
        """Destroy every sandbox this backend keeps ready (its warm pools stop refilling), and
        wait for removals under way: what a process calls before it stops normally. A backend
        without pools has nothing to do."""
        return None

    def restore_archive(self, environment: Environment, limits: Limits, path: pathlib.Path) -> Sandbox:
        """A fresh sandbox of ``environment`` (same mounts and workdir) whose writable
        state is the content of an archive ``Snapshot.export`` wrote; the environment's
        files and setup are not applied again."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore archives")

    def load_archive(self, environment: Environment, limits: Limits, path: pathlib.Path) -> Snapshot:
        """A snapshot holding an archive's state, to ``verify`` tests on (re-scoring)."""
        sandbox = self.restore_archive(environment, limits, path)
        try:
            return sandbox.final_snapshot()
        finally:
            sandbox.destroy()

    def system_identity(self, environment: Environment) -> str:
        """What system a sandbox of ``environment`` runs on and which verifier judges it,
        content-derived and stable (e.g. ``local tree sha256:... verifier sha256:...``)."""
        raise NotImplementedError(f"{type(self).__name__} has no system identity")


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
