"""The "docker" backend: one container per sandbox, driven through the Docker SDK.

(This module is ``evaluation.sandbox.docker``; with absolute imports its own
``import docker`` still gets the SDK.)

Design and why:

* **Filesystem**: the image's root filesystem is mounted read-only; the
  writable directories (``WRITABLE_SYSTEM_DIRS`` + the workdir's top-level dir)
  are tmpfs mounts. The storage driver here (overlay2 on ext4) cannot cap a
  container's writable layer (``storage-opt size`` needs xfs with project
  quotas), and a per-file ``ulimit -f`` alone would not stop an agent writing many
  files; tmpfs fails writes with ENOSPC at its size and never touches the host
  disk. Docker 20.10 cannot put several directories on one tmpfs (no volume
  subpaths), so ``disk_mb`` is split (``tmpfs_sizes``): half for the directory
  holding the workdir, 20% /tmp, 10% each /root and /var, the rest shared by the
  others, each plus room for the image content seeded into it. tmpfs pages are
  charged to the container's memory cgroup, whose limit is therefore
  ``memory_mb`` + the writable total: a full disk never starves the processes,
  and the sandbox stays usable (the agent can delete files). ``ulimit -f``
  (RLIMIT_FSIZE) is set as well, for the files docker bind-mounts itself
  (/etc/hosts, /etc/hostname, /etc/resolv.conf). Every exec'd process gets the
  highest OOM score so that the OOM killer never picks PID 1.
* **Seeding**: a tmpfs starts empty, so at create the image's content of those
  directories is copied in: read once per image from a created-never-started
  helper container (``get_archive``), cached, and unpacked by ``tar`` inside.
* **Snapshot**: a tar of the writable directories streamed into a host file by a
  helper container of the same image that joins the sandbox's PID namespace and
  reads its files through ``/proc/1/root``: no process runs in the sandbox, so
  nothing runs under the agent's /etc/ld.so.preload (the engine's archive calls
  would not see tmpfs content). Restore starts a fresh container from the same
  image and unpacks it. ``container.commit`` would miss tmpfs content, and the
  read-only root never changes, so the tar is the whole state.
* **Processes**: PID 1 is a bash loop around ``sleep`` (it reaps orphans, which a
  bare ``sleep`` would leave as zombies eating the pids limit). Commands run via
  ``exec`` under ``timeout -s KILL``; whatever the outcome, the exec ends with
  ``kill -KILL -1``, which kills every process but PID 1, so ``sleep &``,
  ``nohup`` or ``setsid`` children never outlive their exec. The host also
  guards the deadline in case the in-container timeout itself is subverted.
* **Test phase** (``DockerSnapshot.verify``): a fresh container with the
  verifier runtime mounted read-only at ``VERIFIER_MOUNT`` (a volume filled from
  the runtime directory once per runtime identity) and a small tmpfs at
  ``TESTS_MOUNT``. The test module and, when the agent left anything at
  /etc/ld.so.preload, an empty file there are written first, while the
  container's writable directories hold nothing of the agent's; then the snapshot
  is unpacked without its /etc/ld.so.preload. From then on, everything the backend
  itself starts in that container (PID 1 and its sleep, the exec wrapper, its
  timeout, the final kill) is the runtime's, through the runtime's loader with
  ``--inhibit-cache``: an agent's /etc/ld.so.cache never reaches them.
  A container built on demand starts empty and gets the whole snapshot; one from
  the warm pool was seeded with the image's content like an agent's container,
  and gets only what differs from it (``evaluation.sandbox.state_diff``: members
  compared by content hash and every attribute, never by mtime alone), after the
  paths the agent removed are deleted, in the same exec. It is removed in the
  background once its test has run.
* **Archives**: a snapshot already is a tar on the host, made by the
  snapshot helper's ``tar``; ``export`` only compresses it. ``restore_archive``
  unpacks an archive into a fresh container whose tmpfs start empty.
* **Network**: always ``network_mode="none"`` (loopback only); the host's
  network is never shared. In ``model`` mode (``evaluation.sandbox.network``)
  the trial gateway's socket directory is bind-mounted read-only at
  ``GATEWAY_MOUNT`` and the harness runtime, if any, at ``HARNESS_MOUNT``;
  each ``exec`` starts the forwarder. Both are host paths, so the worker and
  the Docker engine must share a filesystem for model mode (true for a local
  engine; a worker in a container needs the gateway's directory,
  ``VERIHARM_GATEWAY_SOCKET_DIR``, and the harness runtime at the same paths
  on the engine's host). Snapshots and their copies have neither.
* **Crash recovery**: containers are labelled ``veriharm.sandbox=1`` plus the
  owning pid, its start time and the host name; ``cleanup_orphans`` removes those
  whose owner is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import secrets
import shlex
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, cast

import docker
import docker.errors
from docker.models.containers import Container
from docker.types import Ulimit
from docker.utils.socket import frames_iter

from .base import (
    BASH,
    DEFAULT_SETUP_TIMEOUT,
    INTERNAL_TIMEOUT,
    MAX_OUTPUT_BYTES,
    PRELOAD_PATH,
    RM,
    SANDBOX_HOME,
    SANDBOX_HOSTNAME,
    SANDBOX_LABEL,
    SH,
    TAR,
    TESTS_MOUNT,
    TIMEOUT,
    VERIFIER_ENV,
    VERIFIER_LIBS,
    VERIFIER_LOADER,
    VERIFIER_MOUNT,
    ArchiveInfo,
    CommandSandbox,
    Environment,
    ExecResult,
    Limits,
    OutputCollector,
    RawResult,
    SandboxBackend,
    SandboxError,
    Snapshot,
    UseGate,
    audited,
    build_tar,
    exec_result,
    export_tar_file,
    hidden_test_name,
    inode_cap,
    open_archive,
    plan_writable_mounts,
    read_identity,
    verifier_argv,
)
from .images import VERIFIER_IDENTITY, default_image, require_verifier_root
from .network import GATEWAY_MOUNT, HARNESS_MOUNT, ModelAccess, forwarder_argv
from .pool import WarmPool
from .state_diff import RangeReader, Signature, StateDiff, StateIndex, state_diff

logger = logging.getLogger(__name__)

# Files docker bind-mounts into every container; they live on the host and must
# be neither overwritten by a seed/restore nor carried into a snapshot.
DOCKER_MANAGED = ("etc/hosts", "etc/hostname", "etc/resolv.conf")


@dataclass(frozen=True)
class _Tools:
    """How the backend's own plumbing starts sh, timeout and sleep in a container."""

    sh: tuple[str, ...]
    timeout: str
    sleep: str


SYSTEM_TOOLS = _Tools(sh=(SH,), timeout=TIMEOUT, sleep="sleep")
# Test phase: the runtime's copies, through its own loader (no ld.so.cache).
_VLOAD = f"{VERIFIER_LOADER} --inhibit-cache --library-path {VERIFIER_LIBS}"
VERIFIER_TOOLS = _Tools(
    sh=(VERIFIER_LOADER, "--inhibit-cache", "--library-path", VERIFIER_LIBS, f"{VERIFIER_MOUNT}/usr/bin/dash"),
    timeout=f"{_VLOAD} {VERIFIER_MOUNT}/usr/bin/timeout",
    sleep=f"{_VLOAD} {VERIFIER_MOUNT}/usr/bin/sleep",
)
# A snapshot helper (DockerBackend._snapshot_helper) reads the sandbox's files here: the root of
# the sandbox's PID 1, in the PID namespace they share. Its own life is bounded by this.
SNAPSHOT_SOURCE = "/proc/1/root"
HELPER_LIFETIME = 4 * INTERNAL_TIMEOUT
# Size of the tmpfs holding the test module in the test phase.
TESTS_TMPFS_MB = 16
# Where a helper container sees the verifier volume while it is filled.
VOLUME_FILL_MOUNT = "/veriharm-fill"


def _pid1(tools: _Tools) -> str:
    # PID 1: keeps the container alive and reaps orphans (see module docstring).
    return f"trap '' TERM INT HUP; while :; do {tools.sleep} 86400 & wait; done"


PID1 = _pid1(SYSTEM_TOOLS)
# How long past the in-container deadline the host waits before killing itself.
HOST_GRACE = 5.0


# Kills every process but PID 1 and the caller (``kill -KILL -1`` spares only
# those, so setsid/nohup/disowned children cannot escape it), then waits, bounded,
# until they are really gone, zombies included: when an exec returns, nothing of
# it is left. PID 1's own "sleep" is killed too and respawned, hence "at most one".
def _reap_all(tools: _Tools) -> str:
    return (
        "i=0; while [ $i -lt 200 ]; do kill -KILL -1 2>/dev/null; n=0; "
        'for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || n=$((n+1)); done; '
        f"[ $n -le 1 ] && break; {tools.sleep} 0.01; i=$((i+1)); done"
    )


REAP_ALL = _reap_all(SYSTEM_TOOLS)


# Runs the command under a hard deadline, then REAP_ALL. The command runs as a
# background job so that the "Killed" notice sh prints for a
# job dying of a signal comes from ``wait``, whose stderr is silenced, instead of
# landing in the agent's stderr. A background job's stdin defaults to /dev/null,
# hence the explicit <&3.
#
# Everything an exec starts gets the highest OOM score: tmpfs pages count against
# the memory limit, and when an agent fills them the kernel must kill its
# processes, not PID 1 (whose death would end the container and its state).
# Lowering PID 1's score instead would need CAP_SYS_RESOURCE.
def _exec_wrapper(tools: _Tools) -> str:
    return (
        "echo 1000 > /proc/self/oom_score_adj 2>/dev/null; "
        f'exec 3<&0; secs=$1; shift; {tools.timeout} --kill-after=1 -s KILL "$secs" "$@" <&3 3<&- & '
        f"wait $! 2>/dev/null; rc=$?; exec 3<&-; {_reap_all(tools)}; exit $rc"
    )


EXEC_WRAPPER = _exec_wrapper(SYSTEM_TOOLS)
TIMEOUT_STATUSES = (124, 137)

_LIVE: set[str] = set()  # container ids owned by live sandbox objects of this process
# Tokens of containers this process is creating: between the engine's answer and the sandbox
# object taking the id (or, for a helper, its whole short use) they are this process's own but
# not yet live, and a sweep in another thread must leave them alone.
_CREATING: set[str] = set()
CREATION_LABEL = "veriharm.creation"
_LIVE_LOCK = threading.Lock()


def _process_start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _owner_labels(kind: str) -> dict[str, str]:
    pid = os.getpid()
    return {
        SANDBOX_LABEL: "1",
        "veriharm.kind": kind,
        "veriharm.owner_pid": str(pid),
        "veriharm.owner_start": str(_process_start_time(pid)),
        "veriharm.host": socket.gethostname(),
    }


@contextlib.contextmanager
def _creating(kind: str) -> Iterator[dict[str, str]]:
    """The owner labels for a container about to be created, marked as being created until the
    block ends: ``cleanup_orphans`` leaves it alone until then."""
    token = secrets.token_hex(8)
    with _LIVE_LOCK:
        _CREATING.add(token)
    try:
        yield {**_owner_labels(kind), CREATION_LABEL: token}
    finally:
        with _LIVE_LOCK:
            _CREATING.discard(token)


def _owner_gone(labels: Mapping[str, str]) -> bool:
    try:
        pid = int(labels.get("veriharm.owner_pid", ""))
    except ValueError:
        return True
    return str(_process_start_time(pid)) != labels.get("veriharm.owner_start")


def _tmpfs_options(mount: str, size_mb: int) -> str:
    mode = {"/tmp": "1777", SANDBOX_HOME: "700"}.get(mount, "755")
    # exec: scripts in the workdir and /tmp must run; nosuid/nodev: nothing gains privileges.
    # nr_inodes: millions of empty files would cost no bytes but make snapshots crawl.
    return f"rw,exec,nosuid,nodev,size={size_mb}m,nr_inodes={inode_cap(size_mb)},mode={mode}"


# How disk_mb is shared among the writable directories (docker has no way to put
# them all on one tmpfs, see the module docstring). The rest goes in equal parts
# to the other writable directories.
DISK_SHARES = {"workdir": 0.5, "/tmp": 0.2, SANDBOX_HOME: 0.1, "/var": 0.1}


def tmpfs_sizes(mounts: tuple[str, ...], workdir: str, disk_mb: int, seeds: Mapping[str, int]) -> dict[str, int]:
    """MiB per writable mount: its share of disk_mb plus room for its seeded content.

    The sizes add up to disk_mb plus the seeds (plus rounding), so the whole
    writable area stays within the memory cgroup's allowance for it.
    """
    holder = max((m for m in mounts if workdir == m or workdir.startswith(m + "/")), key=len)
    shares = {m: 0.0 for m in mounts}
    shares[holder] += DISK_SHARES["workdir"]
    for mount in ("/tmp", SANDBOX_HOME, "/var"):
        if mount in shares:
            shares[mount] += DISK_SHARES[mount]
    others = [m for m in mounts if shares[m] == 0.0]
    left = 1.0 - sum(shares.values())
    for mount in others:
        shares[mount] = left / len(others)
    return {m: max(1, round(shares[m] * disk_mb)) + (seeds.get(m, 0) + (1 << 20) - 1) // (1 << 20) + 1 for m in mounts}


@dataclass(frozen=True)
class _Spec:
    image: str
    workdir: str
    mounts: tuple[str, ...]
    limits: Limits
    sizes: tuple[tuple[str, int], ...] = ()  # MiB per mount, fixed at create for every restore
    verifier: str | None = None  # test phase: the verifier runtime's volume
    # Model mode: the gateway's socket directory and the harness runtime (host paths).
    gateway: str | None = None
    harness: str | None = None

    @property
    def tools(self) -> _Tools:
        return VERIFIER_TOOLS if self.verifier else SYSTEM_TOOLS

    @property
    def writable_mb(self) -> int:
        return sum(size for _, size in self.sizes)


class DockerSandbox(CommandSandbox):
    def __init__(self, backend: DockerBackend, spec: _Spec, container: Container) -> None:
        super().__init__(spec.workdir)
        self.backend = backend
        self.spec = spec
        self.container = container
        self.id = _container_id(container)
        # The key of the pristine content it was seeded with (``DockerBackend._seed``); None: empty.
        self.seeded: tuple[str, tuple[str, ...]] | None = None
        with _LIVE_LOCK:
            _LIVE.add(self.id)
        self._finalizer = weakref.finalize(self, _remove_container, backend.client, self.id)

    def _exec_argv(self, argv: list[str]) -> list[str]:
        return forwarder_argv(argv) if self.spec.gateway else argv

    def _run(
        self,
        argv: list[str],
        *,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | IO[bytes] | None = None,
        output_limit: int | None = MAX_OUTPUT_BYTES,
        stdout_to: IO[bytes] | None = None,
        reap: bool = True,
    ) -> RawResult:
        """``reap=False``: under the deadline alone, without the final kill (a snapshot helper, whose
        kill would reach the sandbox whose PID namespace it shares, and its own keep-alive)."""
        api = self.backend.client.api
        seconds = f"{max(timeout, 0.01):.3f}"
        started = time.monotonic()
        try:
            tools = self.spec.tools
            command = (
                [*tools.sh, "-c", _exec_wrapper(tools), "sh", seconds, *argv]
                if reap
                else [*shlex.split(tools.timeout), "--kill-after=1", "-s", "KILL", seconds, *argv]
            )
            exec_id = api.exec_create(
                self.id,
                command,
                stdin=stdin is not None,
                stdout=True,
                stderr=True,
                environment=dict(env) if env else None,
                workdir=cwd or self.workdir,
            )["Id"]
            stream = api.exec_start(exec_id, socket=True)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot exec in container {self.id[:12]}: {exc}") from exc
        # A socket either way: exec_start(socket=True) gives it or a SocketIO over it (private _sock).
        raw = cast(socket.socket, getattr(stream, "_sock", stream))
        # The client's API timeout would otherwise cut a long silent command; the
        # deadline is enforced below instead.
        raw.settimeout(None)
        out, err = OutputCollector(output_limit), OutputCollector(output_limit)
        failure: list[BaseException] = []

        def read() -> None:
            try:
                for stream_id, chunk in frames_iter(raw, tty=False):
                    if stream_id == 1:
                        if stdout_to is not None:
                            stdout_to.write(chunk)
                        else:
                            out.add(chunk)
                    else:
                        err.add(chunk)
            except OSError as exc:  # socket closed by the host guard, or daemon gone
                failure.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        writer = threading.Thread(target=_feed_socket, args=(raw, stdin), daemon=True) if stdin is not None else None
        reader.start()
        if writer:
            writer.start()
        reader.join(timeout + HOST_GRACE)
        host_killed = reader.is_alive()
        if host_killed:
            # The in-container deadline did not fire (e.g. timeout(1) itself was
            # killed): kill everything from a second exec.
            self._kill_all_processes()
            reader.join(HOST_GRACE)
        try:
            # Unblocks a writer stuck on a command that stopped reading its stdin.
            raw.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        # docker-py ties the HTTP response to the socket; closing the socket alone leaves the
        # response to fail on a closed file when it is garbage collected.
        response = getattr(stream, "_response", None)
        with contextlib.suppress(OSError, ValueError):
            if response is not None:
                response.close()
            stream.close()
        if writer:
            writer.join(HOST_GRACE)
        duration = time.monotonic() - started
        if reader.is_alive():
            raise SandboxError(f"exec in container {self.id[:12]} does not finish even after killing its processes")
        exit_code = self._exit_code(exec_id)
        if exit_code is not None and exit_code >= 126:
            self._check_running()
        if failure and not host_killed:
            # The output stream broke off: whatever status the exec had, its output is incomplete,
            # and an incomplete output must never pass for the command's whole answer.
            raise SandboxError(f"lost the connection to the docker daemon: {failure[0]}")
        if exit_code is None or exit_code >= 128:
            # The wrapper may itself have been killed (e.g. by a "pkill sh" in the
            # command) before its final kill -1: do that from a fresh exec.
            self._kill_all_processes()
        timed_out = host_killed or (exit_code in TIMEOUT_STATUSES and duration >= timeout)
        return RawResult(
            exit_code=None if timed_out else exit_code,
            stdout=out.data(),
            stderr=err.data(),
            timed_out=timed_out,
            duration=duration,
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
        )

    def _exit_code(self, exec_id: str) -> int | None:
        """The exec's status; the daemon may record it a moment after the streams close."""
        deadline = time.monotonic() + 2.0
        while True:
            try:
                state = self.backend.client.api.exec_inspect(exec_id)
            except docker.errors.DockerException as exc:
                raise SandboxError(f"cannot inspect exec in container {self.id[:12]}: {exc}") from exc
            if not state.get("Running") or time.monotonic() > deadline:
                code = state.get("ExitCode")
                return int(code) if code is not None else None
            time.sleep(0.02)

    def _check_running(self) -> None:
        """Raise if the container itself is gone (e.g. PID 1 killed): its state is lost."""
        try:
            state = self.backend.client.api.inspect_container(self.id)["State"]
        except docker.errors.NotFound as exc:
            raise SandboxError(f"container {self.id[:12]} disappeared") from exc
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot inspect container {self.id[:12]}: {exc}") from exc
        if not state.get("Running"):
            raise SandboxError(
                f"container {self.id[:12]} stopped (exit {state.get('ExitCode')}, "
                f"OOM-killed: {state.get('OOMKilled')}); the sandbox's state is lost"
            )

    def _kill_all_processes(self) -> None:
        try:
            self.container.exec_run([*self.spec.tools.sh, "-c", _reap_all(self.spec.tools)])
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot kill processes in container {self.id[:12]}: {exc}") from exc

    def snapshot(self) -> DockerSnapshot:
        with self._lock:
            self._check_alive()
            return self.backend._snapshot(self)

    def destroy(self) -> None:
        with self._lock:
            self._destroyed = True
            self._finalizer()


def _feed_socket(raw: socket.socket, data: bytes | IO[bytes] | None) -> None:
    try:
        if isinstance(data, bytes | bytearray):
            raw.sendall(data)
        elif data is not None:
            while chunk := data.read(1024 * 1024):
                raw.sendall(chunk)
    except (OSError, EOFError):
        # The command exited without reading everything, or the source broke off (a
        # truncated archive): either way its status says why.
        pass
    finally:
        # Half-close: the command sees EOF on stdin, we still read its output.
        with contextlib.suppress(OSError):
            raw.shutdown(socket.SHUT_WR)


def _container_id(container: Container) -> str:
    assert container.id is not None  # a created container has one (types-docker allow None for any model)
    return container.id


def _remove_container(client: docker.DockerClient, container_id: str) -> None:
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        # "removal already in progress" is fine; anything else is a real failure.
        if "already in progress" not in str(exc):
            raise SandboxError(f"cannot remove container {container_id[:12]}: {exc}") from exc
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(container_id)


class DockerSnapshot(Snapshot):
    def __init__(self, backend: DockerBackend, spec: _Spec, path: Path) -> None:
        self.backend = backend
        self.spec = spec
        self.path = path
        self._gate = UseGate()
        self._state_index: StateIndex | None = None
        self._preload: bool | None = None
        self._index_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _unlink, path)

    def _has_preload(self) -> bool:
        """Whether the agent left anything at /etc/ld.so.preload (read from our tar on the host)."""
        name = PRELOAD_PATH.lstrip("/")
        with self._index_lock:
            if self._preload is None and self._state_index is not None:
                self._preload = name in self._state_index.names()
            if self._preload is None:
                try:
                    with tarfile.open(self.path, "r:") as archive:
                        self._preload = any(m.name.rstrip("/") == name for m in archive)
                except tarfile.TarError as exc:
                    raise SandboxError(f"unreadable snapshot {self.path.name}: {exc}") from exc
            return self._preload

    def _index(self) -> StateIndex:
        """The snapshot's members with their signatures, read once (both tests use it)."""
        with self._index_lock:
            if self._state_index is None:
                try:
                    self._state_index = StateIndex.read(self.path)
                except (tarfile.TarError, OSError) as exc:
                    raise SandboxError(f"unreadable snapshot {self.path.name}: {exc}") from exc
            return self._state_index

    def _diff(self, sandbox: DockerSandbox, seeded: tuple[str, tuple[str, ...]]) -> StateDiff:
        """What ``sandbox``, seeded with ``seeded``, lacks of this snapshot."""
        pristine = self.backend._pristine_manifest(sandbox.spec, seeded)
        roots = [m.lstrip("/") for m in self.spec.mounts]
        return state_diff(self._index(), pristine, roots, MAX_DELETION_BYTES)

    def verify(self, test_source: str, timeout: float) -> ExecResult:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        module = f"{TESTS_MOUNT}/{hidden_test_name()}.py"
        with self._gate.use():
            sandbox = self.backend._test_container(self.spec)
            try:
                diff = None
                if sandbox.seeded is not None:
                    # Seeded with the image's content: only what differs from it goes in.
                    diff = self._diff(sandbox, sandbox.seeded)
                preload = self._has_preload()
                archive: IO[bytes] = (
                    open(self.path, "rb")  # noqa: SIM115 - closed below
                    if diff is None
                    else io.BufferedReader(RangeReader(self.path, diff.ranges))
                )
            except BaseException:
                sandbox.destroy()
                raise
        # The open file outlives a discard (the gate only guards storage being freed under a reader).
        try:
            with archive:
                deletions = diff.deletions if diff else ()
                result = _state_then_test(sandbox, module, test_source, preload, archive, deletions, timeout)
        except BaseException:
            sandbox.destroy()
            raise
        self.backend._remover.remove(sandbox)
        return result

    def export(self, path: Path, *, max_bytes: int) -> ArchiveInfo:
        with self._gate.use():
            return export_tar_file(self.path, path, max_bytes)

    def restore(self) -> DockerSandbox:
        with self._gate.use():
            sandbox = self.backend._start(self.spec)
            try:
                with open(self.path, "rb") as archive:
                    sandbox._put_tar(archive, "the snapshot")
            except BaseException:
                sandbox.destroy()
                raise
            return sandbox

    def discard(self) -> None:
        self._gate.close()
        self._finalizer()


# A test module up to this size goes in as an argument of the exec that unpacks the state (Linux
# caps one argument at 128 KiB); a larger one takes an exec of its own first.
INLINE_TEST_BYTES = 100_000
# Paths to delete travel as arguments of that exec too (Linux caps them all at a quarter of the
# stack limit, 2 MiB by default); beyond this the state goes in whole (state_diff's fallback).
MAX_DELETION_BYTES = 256 * 1024
# --numeric-owner: no user-name lookup, so no NSS module named by the agent's
# /etc/nsswitch.conf is ever loaded while unpacking.
_STATE_OPTIONS = ["--numeric-owner", "--anchored", f"--exclude={PRELOAD_PATH.lstrip('/')}"]
_UNPACK_STATE = [TAR, "-x", "-p", *_STATE_OPTIONS, "-C", "/", "-f", "-"]
# Printed once the state is in, right before the verifier starts (see _state_then_test).
_STATE_WRITTEN = "veriharm-state-written."


def _state_then_test(
    sandbox: DockerSandbox,
    module: str,
    source: str,
    preload: bool,
    archive: IO[bytes],
    deletions: tuple[str, ...],
    timeout: float,
) -> ExecResult:
    """In a test-phase container holding nothing of the agent's yet: write the test module (and the
    empty /etc/ld.so.preload that masks the agent's), unpack the agent's state, then run the test.

    ``deletions``: pristine paths the agent removed, when the container was seeded with the image's
    content and ``archive`` holds only what differs from it; they go first, so nothing of the
    image's that the agent removed is left for the state's tar to merge with.

    The deletions, the test and the mask all happen before any of the agent's files exist in the
    container, and unpacking the state is the last step before the verifier. One exec does it all
    (a docker exec costs tens of milliseconds): the runtime's own shell writes, removes and unpacks,
    prints ``_STATE_WRITTEN``, then becomes the verifier under the test's own deadline. That marker
    opens stdout only once the state is in, so whatever the test does after it -- its exit status
    included -- is a verdict, and its absence an infrastructure failure. A module too large for an
    argument goes in by an exec of its own first."""
    content = source.encode()
    remove = f'&& {RM} -rf -- "$@"' if deletions else ""
    mask = f"&& : > {PRELOAD_PATH}" if preload else ""
    if len(content) > INLINE_TEST_BYTES:
        sandbox._put_tar(build_tar([(module, content, 0o644)]), "the test")
        write, args = ":", [sandbox.workdir]
    else:
        write, args = 'printf "%s" "$2" > "$3"', [sandbox.workdir, source, module]
    seconds = f"{max(timeout, 0.01):.3f}"
    verifier = shlex.join(verifier_argv(module))
    script = (
        f"umask 022 && {write} && w=$1 && shift {len(args)} {remove} {mask} && {shlex.join(_UNPACK_STATE)} && "
        f"printf {_STATE_WRITTEN} && "
        # A missing workdir fails the test, as docker's own chdir would.
        f'{{ cd "$w" || exit 126; }} && '
        f"exec {VERIFIER_TOOLS.timeout} --kill-after=1 -s KILL {seconds} {verifier} </dev/null"
    )
    with sandbox._lock:
        sandbox._check_alive()
        raw = sandbox._run(
            [*VERIFIER_TOOLS.sh, "-c", script, "sh", *args, *deletions],
            timeout=timeout + INTERNAL_TIMEOUT,
            env=VERIFIER_ENV,
            cwd="/",
            stdin=archive,
        )
    if not raw.stdout.startswith(_STATE_WRITTEN.encode()):
        detail = (raw.stderr or raw.stdout).decode("utf-8", "replace").strip()
        status = "timed out" if raw.timed_out else f"exit {raw.exit_code}"
        raise SandboxError(f"cannot write the test and the snapshot: {detail or status}")
    # The verifier's own deadline: it started after the unpacking, so its kill comes at least
    # ``timeout`` after the exec did.
    timed_out = raw.timed_out or (raw.exit_code in TIMEOUT_STATUSES and raw.duration >= timeout)
    return audited(
        exec_result(
            replace(
                raw,
                stdout=raw.stdout[len(_STATE_WRITTEN) :],
                exit_code=None if timed_out else raw.exit_code,
                timed_out=timed_out,
            )
        )
    )


def _destroy(sandbox: DockerSandbox) -> None:
    sandbox.destroy()


class _Remover:
    """Removes finished test containers in the background, off the trial's path.

    Removing a container takes the engine tens of milliseconds that a verdict does not wait for.
    The sandbox is marked destroyed at once (nothing runs in it any more); its container stays
    among this process's live ones until it is gone, and an executor's threads are joined at
    interpreter exit, so a normal exit leaves nothing behind; after a crash the orphan sweep
    removes what was still pending."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self._pending: set[Future[None]] = set()

    def remove(self, sandbox: DockerSandbox) -> None:
        with sandbox._lock:
            sandbox._destroyed = True
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                # A forked child starts its own (the parent's threads are not its).
                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="docker-remove")
                self._pid = os.getpid()
                self._pending = set()
            try:
                future = self._executor.submit(self._destroy, sandbox)
            except RuntimeError:  # the interpreter is shutting down: no new threads
                future = None
            if future is not None:
                self._pending.add(future)
                future.add_done_callback(self._done)
        if future is None:
            sandbox.destroy()

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    @staticmethod
    def _destroy(sandbox: DockerSandbox) -> None:
        try:
            sandbox.destroy()
        except SandboxError as exc:  # the orphan sweep removes it later
            logger.warning("could not remove container %s: %s", sandbox.id[:12], exc)

    def wait(self) -> None:
        """Until every removal asked for so far is done."""
        with self._lock:
            pending = list(self._pending) if self._pid == os.getpid() else []
        for future in pending:
            future.result()


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


class DockerBackend(SandboxBackend):
    name = "docker"

    def __init__(
        self,
        *,
        image: str | None = None,
        client: docker.DockerClient | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        setup_timeout: float = DEFAULT_SETUP_TIMEOUT,
        pool_size: int = 0,
        pool_environments: int = 4,
    ) -> None:
        """``pool_size``: trials' worth of containers kept started ahead of time per environment
        (0: none), for at most ``pool_environments`` environments (see evaluation.sandbox.pool)."""
        self.image = image or default_image()
        try:
            self.client = client or docker.from_env(timeout=300)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"no Docker engine answers (scripts/start_docker.sh starts one): {exc}") from exc
        self.state_dir = Path(state_dir) if state_dir else Path(tempfile.gettempdir()) / "veriharm-docker-snapshots"
        self.setup_timeout = setup_timeout
        self._seeds: dict[tuple[str, tuple[str, ...]], tuple[bytes, dict[str, int]]] = {}
        self._seed_lock = threading.Lock()
        self._manifests: dict[tuple[str, tuple[str, ...]], dict[str, Signature]] = {}
        self._manifest_lock = threading.Lock()
        self._volume: str | None = None
        self._volume_lock = threading.Lock()
        self._image_ids: dict[str, str] = {}
        self._remover = _Remover()
        # Warm pools (evaluation.sandbox.pool): started, seeded agent containers, and seeded
        # test-phase containers (two per trial), per sandbox spec.
        self._agent_pool: WarmPool[_Spec, DockerSandbox] = WarmPool(
            "docker-agent", self._new_agent_container, _destroy, size=pool_size, max_keys=pool_environments
        )
        self._test_pool: WarmPool[_Spec, DockerSandbox] = WarmPool(
            "docker-test", self._new_test_container, _destroy, size=2 * pool_size, max_keys=pool_environments
        )

    # -- create ------------------------------------------------------------------
    def _spec(self, environment: Environment, limits: Limits) -> tuple[_Spec, bytes]:
        """The spec of a sandbox of ``environment`` (tmpfs sizes included) and its seed tar."""
        spec = _Spec(
            image=environment.image or self.image,
            workdir=environment.workdir,
            mounts=plan_writable_mounts(environment),
            limits=limits,
        )
        seed, seed_sizes = self._seed(spec)
        sizes = tmpfs_sizes(spec.mounts, spec.workdir, limits.disk_mb, seed_sizes)
        return replace(spec, sizes=tuple(sizes.items())), seed

    def create(
        self, environment: Environment, limits: Limits = Limits(), *, model: ModelAccess | None = None
    ) -> DockerSandbox:
        spec, seed = self._spec(environment, limits)
        sandbox = None
        if model is not None:
            # The gateway's socket is a volume, fixed when the container starts: never pooled.
            harness = model.harness_root.resolve() if model.harness_root else None
            spec = replace(spec, gateway=str(model.socket_dir.resolve()), harness=str(harness) if harness else None)
        else:
            sandbox = self._agent_pool.take(spec)
            if self._test_pool.enabled:
                # The test phase of this trial will want its containers too: start them now.
                self._test_pool.warm(self._test_spec(spec))
        if sandbox is None:
            sandbox = self._new_agent_container(spec, seed)
        try:
            sandbox._apply_environment(environment, self.setup_timeout)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _new_agent_container(self, spec: _Spec, seed: bytes | None = None) -> DockerSandbox:
        """A started container holding the image's content of its writable directories."""
        if seed is None:
            seed = self._seed(spec)[0]
        sandbox = self._start(spec)
        try:
            sandbox._put_tar(seed, f"the image's content of {', '.join(spec.mounts)}")
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _new_test_container(self, spec: _Spec) -> DockerSandbox:
        """A test-phase container holding the image's content of its writable directories, for
        the pool: a trial then sends it only what its agent changed (``DockerSnapshot.verify``).
        Seeded by the same tar, from the same archive, as an agent's container."""
        key, (seed, _) = self._seed_with_key(spec)
        self._pristine_manifest(spec, key)  # made now, off the trial's path
        sandbox = self._new_agent_container(spec, seed)
        sandbox.seeded = key
        return sandbox

    def _pristine_manifest(self, spec: _Spec, key: tuple[str, tuple[str, ...]]) -> dict[str, Signature]:
        """Name -> signature of every member a snapshot of a container freshly seeded with ``key``
        holds; made once per key, in a container of ``spec``'s shape.

        Taken from such a snapshot, made by the very command that makes an agent's, rather than from
        the seed archive: what tar records of a seeded file is what a final state is compared with."""
        with self._manifest_lock:
            manifest = self._manifests.get(key)
            if manifest is not None:
                return manifest
            image_id, mounts = key
            plain = replace(spec, image=image_id, mounts=mounts, verifier=None, gateway=None, harness=None)
            sandbox = self._new_agent_container(plain, self._seeds[key][0])
            try:
                with tempfile.TemporaryFile(dir=self._state_dir()) as archive:
                    self._tar_state(sandbox, archive)
                    archive.seek(0)
                    manifest = StateIndex.read(archive.read()).manifest()
            finally:
                sandbox.destroy()
            self._manifests[key] = manifest
            return manifest

    def _test_spec(self, spec: _Spec) -> _Spec:
        return replace(spec, gateway=None, harness=None, verifier=self._verifier_volume())

    def _test_container(self, spec: _Spec) -> DockerSandbox:
        """A test-phase container (verifier runtime mounted, nothing of the agent's yet): seeded with the
        image's content when the pool had one ready, else empty."""
        test_spec = self._test_spec(spec)
        return self._test_pool.take(test_spec) or self._start(test_spec)

    def pooled(self) -> list:
        """Every sandbox the pools hold ready now."""
        return [*self._agent_pool.members(), *self._test_pool.members()]

    def wait_warm(self, environment: Environment, limits: Limits | None = None, timeout: float = 60.0) -> bool:
        """Ask for ``environment``'s sandboxes to be kept ready and wait until they are (True), at
        most ``timeout`` seconds."""
        spec, _ = self._spec(environment, limits or Limits())
        self._agent_pool.warm(spec)
        self._test_pool.warm(self._test_spec(spec))
        return self._agent_pool.wait_ready(spec, timeout) and self._test_pool.wait_ready(self._test_spec(spec), timeout)

    def wait_pools_idle(self, timeout: float = 60.0) -> bool:
        """Until the pools build nothing and want nothing (True), at most ``timeout`` seconds each."""
        return self._agent_pool.wait_idle(timeout) and self._test_pool.wait_idle(timeout)

    def drain_pools(self) -> None:
        """Remove every container kept ready (the pools stop refilling), and wait for the test
        containers still being removed."""
        self._agent_pool.drain()
        self._test_pool.drain()
        self._remover.wait()

    def wait_removed(self) -> None:
        """Until the test containers of the trials run so far are removed (benchmarks: a quiet engine)."""
        self._remover.wait()

    def restore_archive(self, environment: Environment, limits: Limits, path: Path) -> DockerSandbox:
        spec, _ = self._spec(environment, limits)
        sandbox = self._start(spec)
        try:
            sandbox.unpack_archive(path)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def load_archive(self, environment: Environment, limits: Limits, path: Path) -> DockerSnapshot:
        # A snapshot is a tar on the host: decompressing the archive is all it takes,
        # and no container runs the agent's state to make it.
        spec, _ = self._spec(environment, limits)
        target = self._snapshot_path()
        snapshot = DockerSnapshot(self, spec, target)
        try:
            with open_archive(path) as archive, open(target, "wb") as out:
                shutil.copyfileobj(archive, out, 1024 * 1024)
        except (OSError, EOFError) as exc:
            snapshot.discard()
            raise SandboxError(f"cannot read archive {path}: {exc}") from exc
        except BaseException:
            snapshot.discard()
            raise
        return snapshot

    def system_identity(self, environment: Environment) -> str:
        image = environment.image or self.image
        image_id = self._image_ids.get(image)
        if image_id is None:
            image_id = self._image_ids[image] = self._image_id(image)
        verifier = read_identity(require_verifier_root() / VERIFIER_IDENTITY, "verifier runtime")
        return f"docker image {image_id} verifier {verifier}"

    # -- the verifier runtime's volume --------------------------------------------
    def _verifier_volume(self) -> str:
        """The volume holding the verifier runtime, made from its directory when missing.

        Named after the runtime's identity, so a rebuilt runtime gets a new volume and a
        volume in use is never rewritten; its identity file is copied in last, so a
        half-filled volume (crash) is recognised and filled again.
        """
        with self._volume_lock:
            if self._volume is not None:
                return self._volume
            root = require_verifier_root()
            identity = read_identity(root / VERIFIER_IDENTITY, "verifier runtime")
            name = f"veriharm-verifier-{identity.removeprefix('sha256:')[:24]}"
            self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            with open(self.state_dir / ".verifier-volume.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    if self._volume_identity(name) != identity:
                        self._fill_volume(name, root)
                    if self._volume_identity(name) != identity:
                        raise SandboxError(f"volume {name} does not hold the verifier runtime {identity}")
                except docker.errors.DockerException as exc:
                    raise SandboxError(f"cannot prepare the verifier volume {name}: {exc}") from exc
            self._volume = name
            return name

    @contextlib.contextmanager
    def _volume_helper(self, name: str, mode: str) -> Iterator[Container]:
        """A stopped container with volume ``name`` mounted, for its whole use, then removed."""
        with _creating("helper") as labels:
            helper = self.client.containers.create(
                self.image,
                command=["true"],
                network_disabled=True,
                labels=labels,
                volumes={name: {"bind": VOLUME_FILL_MOUNT, "mode": mode}},
            )
            try:
                yield helper
            finally:
                _remove_container(self.client, _container_id(helper))

    def _volume_identity(self, name: str) -> str | None:
        try:
            self.client.volumes.get(name)
        except docker.errors.NotFound:
            return None
        with self._volume_helper(name, "ro") as helper:
            try:
                chunks, _ = helper.get_archive(f"{VOLUME_FILL_MOUNT}/{VERIFIER_IDENTITY}")
                with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as archive:
                    for member in archive:
                        content = archive.extractfile(member)
                        return content.read().decode().strip() if content else None
            except docker.errors.NotFound:
                return None
        return None

    def _fill_volume(self, name: str, root: Path) -> None:
        self.client.volumes.create(name, labels={SANDBOX_LABEL + ".verifier": "1"})
        with self._volume_helper(name, "rw") as helper, tempfile.TemporaryFile(dir=self.state_dir) as stream:
            with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as archive:
                for entry in sorted(root.iterdir()):
                    if entry.name != VERIFIER_IDENTITY:
                        archive.add(entry, arcname=entry.name)
                archive.add(root / VERIFIER_IDENTITY, arcname=VERIFIER_IDENTITY)
            stream.seek(0)
            if not helper.put_archive(VOLUME_FILL_MOUNT, stream):
                raise SandboxError(f"the docker engine refused to fill volume {name}")

    def _image_id(self, image: str) -> str:
        try:
            return str(self.client.images.get(image).id)
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(
                f"docker image {image!r} not found (no registry is used; build the default one with "
                "scripts/build_sandbox_image.sh)"
            ) from exc
        except docker.errors.DockerException as exc:
            raise SandboxError(f"docker engine error: {exc}") from exc

    def _seed(self, spec: _Spec) -> tuple[bytes, dict[str, int]]:
        """One tar (paths relative to /) of the image's content of the writable dirs, and
        the bytes it holds per mount; cached per image."""
        return self._seed_with_key(spec)[1]

    def _seed_with_key(self, spec: _Spec) -> tuple[tuple[str, tuple[str, ...]], tuple[bytes, dict[str, int]]]:
        """``_seed``, with the key it is cached under: the image's id and the writable dirs."""
        key = (self._image_id(spec.image), spec.mounts)
        with self._seed_lock:
            if key not in self._seeds:
                self._seeds[key] = self._read_image_dirs(spec.image, spec.mounts)
            return key, self._seeds[key]

    def _read_image_dirs(self, image: str, mounts: tuple[str, ...]) -> tuple[bytes, dict[str, int]]:
        with _creating("helper") as labels:
            return self._read_image_dirs_with(image, mounts, labels)

    def _read_image_dirs_with(
        self, image: str, mounts: tuple[str, ...], labels: dict[str, str]
    ) -> tuple[bytes, dict[str, int]]:
        try:
            helper = self.client.containers.create(image, command=["true"], network_disabled=True, labels=labels)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot create a helper container from {image}: {exc}") from exc
        output = io.BytesIO()
        sizes: dict[str, int] = {}
        try:
            with tarfile.open(fileobj=output, mode="w", format=tarfile.PAX_FORMAT) as combined:
                for mount in mounts:
                    try:
                        chunks, _ = helper.get_archive(mount)
                    except docker.errors.NotFound:
                        continue  # the image lacks it: the tmpfs starts empty
                    # get_archive names members after the basename ("local/..." for
                    # /usr/local); rename them relative to "/" so one tar -C / fits all.
                    prefix = mount.lstrip("/").rsplit("/", 1)[0] + "/" if mount.count("/") > 1 else ""
                    with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as part:
                        for member in part:
                            member.name = prefix + member.name
                            if member.name in DOCKER_MANAGED:
                                continue
                            if member.islnk():
                                member.linkname = prefix + member.linkname
                            # tmpfs rounds every file up to whole pages.
                            sizes[mount] = sizes.get(mount, 0) + (member.size + 4095) // 4096 * 4096 + 4096
                            combined.addfile(member, part.extractfile(member) if member.isfile() else None)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot read {image}'s filesystem: {exc}") from exc
        finally:
            _remove_container(self.client, _container_id(helper))
        return output.getvalue(), sizes

    def _start(self, spec: _Spec) -> DockerSandbox:
        tmpfs = {m: _tmpfs_options(m, size) for m, size in spec.sizes}
        volumes: dict[str, dict[str, str]] = {}
        command = [BASH, "-c", PID1]
        if spec.verifier:
            # No exec: the test module is only read. The runtime's own shell is PID 1.
            tmpfs[TESTS_MOUNT] = f"rw,noexec,nosuid,nodev,size={TESTS_TMPFS_MB}m,mode=755"
            volumes[spec.verifier] = {"bind": VERIFIER_MOUNT, "mode": "ro"}
            command = [*VERIFIER_TOOLS.sh, "-c", _pid1(VERIFIER_TOOLS)]
        if spec.gateway:
            volumes[spec.gateway] = {"bind": GATEWAY_MOUNT, "mode": "ro"}
        if spec.harness:
            volumes[spec.harness] = {"bind": HARNESS_MOUNT, "mode": "ro"}
        with _creating("sandbox") as labels:
            return self._run_container(spec, command, tmpfs, volumes, labels)

    def _run_container(
        self,
        spec: _Spec,
        command: list[str],
        tmpfs: dict[str, str],
        volumes: dict[str, dict[str, str]],
        labels: dict[str, str],
        *,
        pid_mode: str | None = None,
    ) -> DockerSandbox:
        limits = spec.limits
        disk_bytes = limits.disk_mb * 1024 * 1024
        try:
            container = self.client.containers.run(
                spec.image,
                command=command,
                entrypoint=[],
                detach=True,
                labels=labels,
                hostname=SANDBOX_HOSTNAME,
                network_mode="none",
                read_only=True,
                tmpfs=tmpfs,
                volumes=volumes,
                environment={"HOME": SANDBOX_HOME, "LANG": "C.UTF-8"},
                working_dir="/",
                # tmpfs pages are charged here too: room for the processes plus a
                # full writable area (see the module docstring), and no swap on top.
                mem_limit=f"{limits.memory_mb + spec.writable_mb}m",
                memswap_limit=f"{limits.memory_mb + spec.writable_mb}m",
                nano_cpus=int(limits.cpus * 1e9),
                # + PID 1, its sleep, and each exec's sh wrapper and timeout(1).
                pids_limit=limits.pids + 4,
                ulimits=[Ulimit(name="fsize", soft=disk_bytes, hard=disk_bytes), Ulimit(name="core", soft=0, hard=0)],
                # Root inside, as in a normal task container, minus what no task needs.
                cap_drop=["NET_RAW", "MKNOD", "AUDIT_WRITE", "SETFCAP", "SYS_CHROOT"],
                security_opt=["no-new-privileges"],
                stop_signal="SIGKILL",
                pid_mode=pid_mode,
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot start a container from {spec.image}: {exc}") from exc
        return DockerSandbox(self, spec, container)

    # -- snapshots ----------------------------------------------------------------
    def _state_dir(self) -> Path:
        self.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.state_dir

    def _snapshot_path(self) -> Path:
        pid = os.getpid()
        return self._state_dir() / f"snap-{pid}-{_process_start_time(pid)}-{secrets.token_hex(6)}.tar"

    def _snapshot(self, sandbox: DockerSandbox) -> DockerSnapshot:
        path = self._snapshot_path()
        # The copies of a snapshot (restores, test phase) have no model access.
        snapshot = DockerSnapshot(self, replace(sandbox.spec, gateway=None, harness=None), path)
        try:
            with open(path, "wb") as archive:
                self._tar_state(sandbox, archive)
        except BaseException:
            snapshot.discard()
            raise
        return snapshot

    def _tar_state(self, sandbox: DockerSandbox, archive: IO[bytes]) -> None:
        """A tar of the container's writable directories into ``archive``, made from outside it.

        Every process started in the container itself loads what its /etc/ld.so.preload names,
        which is the agent's to write, and the engine's archive calls do not see tmpfs content.
        So the tar runs in a snapshot helper (``_snapshot_helper``), where the image's own
        loader, tar and /etc apply, and reads the container's files through its PID 1's root:
        nothing runs in the container. (The pristine manifest of ``state_diff`` is made the
        same way, from a freshly seeded container.)"""
        members = [m.lstrip("/") for m in sandbox.spec.mounts]
        excludes = [f"--exclude=./{p}" for p in DOCKER_MANAGED] + [f"--exclude={p}" for p in DOCKER_MANAGED]
        with self._snapshot_helper(sandbox) as helper:
            result = helper._run(
                [TAR, "-C", SNAPSHOT_SOURCE, "-c", "-f", "-", "--numeric-owner", *excludes, *members],
                timeout=INTERNAL_TIMEOUT,
                cwd="/",
                stdout_to=archive,
                output_limit=64 * 1024,
                reap=False,
            )
        # 1 = "some files changed while being read": harmless, nothing runs now.
        if result.exit_code not in (0, 1):
            detail = result.stderr.decode("utf-8", "replace").strip()
            raise SandboxError(f"snapshot of container {sandbox.id[:12]} failed: {detail}")

    @contextlib.contextmanager
    def _snapshot_helper(self, sandbox: DockerSandbox) -> Iterator[DockerSandbox]:
        """A container of ``sandbox``'s image in ``sandbox``'s PID namespace, for one snapshot.

        Its root is the image's, read-only, with nothing writable: no file of the agent's is on
        its paths, so its loader, tar and libraries are the image's. It has the sandbox's
        capabilities, no fewer (reading another process's root takes as many), and no network.
        It keeps itself alive only for a while and is removed, with its processes, once the tar
        has run; its exec does not end by killing what it sees, which would be the sandbox's."""
        spec = _Spec(image=sandbox.spec.image, workdir="/", mounts=(), limits=sandbox.spec.limits)
        with _creating("helper") as labels:
            helper = self._run_container(
                spec,
                ["sleep", f"{HELPER_LIFETIME:.0f}"],
                {},
                {},
                labels,
                pid_mode=f"container:{sandbox.id}",
            )
        try:
            yield helper
        finally:
            helper.destroy()

    # -- orphans --------------------------------------------------------------------
    def cleanup_orphans(self) -> int:
        here = socket.gethostname()
        try:
            # The list alone (ids and labels): the SDK's containers.list() then inspects each
            # container, and one removed meanwhile by any other process would fail the sweep.
            containers = self.client.api.containers(all=True, filters={"label": f"{SANDBOX_LABEL}=1"})
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot list containers: {exc}") from exc
        removed = 0
        for container in containers:
            container_id, labels = container["Id"], container.get("Labels") or {}
            if labels.get("veriharm.host") != here:
                continue  # another machine's, sharing this engine: not ours to judge
            mine = labels.get("veriharm.owner_pid") == str(os.getpid())
            with _LIVE_LOCK:
                live = container_id in _LIVE or labels.get(CREATION_LABEL) in _CREATING
            if (mine and not live) or (not mine and _owner_gone(labels)):
                _remove_container(self.client, container_id)
                if labels.get("veriharm.kind") == "sandbox":
                    removed += 1
        self._remove_orphan_snapshots()
        return removed

    def _remove_orphan_snapshots(self) -> None:
        if not self.state_dir.is_dir():
            return
        for path in self.state_dir.glob("snap-*.tar"):
            try:
                _, pid, start, _rest = path.name.split("-", 3)
            except ValueError:
                continue
            if str(_process_start_time(int(pid))) != start:
                _unlink(path)


class _ChunkReader(io.RawIOBase):
    """A file-like view of the byte chunks get_archive yields, for tarfile's stream mode."""

    def __init__(self, chunks: Any) -> None:
        self._chunks = iter(chunks)
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            try:
                self._buffer = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(target), len(self._buffer))
        target[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size
