"""What a sandbox is made of and what running in it gives back, shared by every backend.

The layout: where a sandbox may write (``WRITABLE_SYSTEM_DIRS`` plus the workdir's top-level
directory, ``plan_writable_mounts``) and what stays the read-only OS; the tools the backends run by
absolute path; the task's ``Environment``, the ``Limits`` a sandbox runs under, an exec's
``ExecResult``; and ``SandboxError``, the infrastructure failure that is never an agent outcome.
"""

from __future__ import annotations

import pathlib
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .network import HOST_NETWORK_REFUSED

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

# Each captured stream of an exec is cut at this size: an agent printing
# gigabytes must not exhaust the host's memory.
MAX_OUTPUT_BYTES = 4 * 1024 * 1024
# Internal operations (file transfer, snapshots) get this much time.
INTERNAL_TIMEOUT = 120.0
DEFAULT_SETUP_TIMEOUT = 600.0


class SandboxError(Exception):
    """Infrastructure failure (cannot create, daemon gone...): never an agent outcome."""


def read_identity(path: pathlib.Path, what: str) -> str:
    """The ``sha256:...`` line the build script wrote for the tree or the verifier runtime."""
    try:
        value = path.read_text().strip()
    except OSError as exc:
        raise SandboxError(f"no identity for the {what} at {path}; run scripts/build_sandbox_image.sh") from exc
    if not value.startswith("sha256:"):
        raise SandboxError(f"unreadable identity for the {what} in {path}: {value[:80]!r}")
    return value


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
