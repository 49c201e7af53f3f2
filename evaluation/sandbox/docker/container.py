"""A sandbox's container: how it is laid out, started, and how commands run in it.

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
* **Processes**: PID 1 is a bash loop around ``sleep`` (it reaps orphans, which a
  bare ``sleep`` would leave as zombies eating the pids limit). Commands run via
  ``exec`` under ``timeout -s KILL``; whatever the outcome, the exec ends with
  ``kill -KILL -1``, which kills every process but PID 1, so ``sleep &``,
  ``nohup`` or ``setsid`` children never outlive their exec. The host also
  guards the deadline in case the in-container timeout itself is subverted.
* **Network**: always ``network_mode="none"`` (loopback only); the host's
  network is never shared. In ``model`` mode (``evaluation.sandbox.network``)
  the trial gateway's socket directory is bind-mounted read-only at
  ``GATEWAY_MOUNT`` and the harness runtime, if any, at ``HARNESS_MOUNT``;
  each ``exec`` starts the forwarder. Both are host paths, so the worker and
  the Docker engine must share a filesystem for model mode (true for a local
  engine; a worker in a container needs the gateway's directory,
  ``VERIHARM_GATEWAY_SOCKET_DIR``, and the harness runtime at the same paths
  on the engine's host). Snapshots and their copies have neither.

(With absolute imports, ``import docker`` in this package still gets the SDK.)
"""

from __future__ import annotations

import contextlib
import shlex
import socket
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Protocol, cast

import docker
import docker.errors
from docker.models.containers import Container
from docker.types import Ulimit
from docker.utils.socket import frames_iter

from ..commands import ByteSink, CommandSandbox, OutputCollector, RawResult
from ..environment import (
    BASH,
    INTERNAL_TIMEOUT,
    MAX_OUTPUT_BYTES,
    SANDBOX_HOME,
    SANDBOX_HOSTNAME,
    SH,
    TIMEOUT,
    Limits,
    SandboxError,
    inode_cap,
)
from ..interface import Snapshot
from ..network import GATEWAY_MOUNT, HARNESS_MOUNT, forwarder_argv
from ..verifier import TESTS_MOUNT, VERIFIER_LIBS, VERIFIER_LOADER, VERIFIER_MOUNT
from .orphans import LIVE, LIVE_LOCK, container_id_of, creating, remove_container

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
HELPER_LIFETIME = 4 * INTERNAL_TIMEOUT
# Size of the tmpfs holding the test module in the test phase.
TESTS_TMPFS_MB = 16


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
class ContainerSpec:
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


class ContainerHost(Protocol):
    """What a sandbox needs of its backend: the engine's client, and the making of snapshots."""

    client: docker.DockerClient

    def _snapshot(self, sandbox: DockerSandbox) -> Snapshot: ...


class DockerSandbox(CommandSandbox):
    def __init__(self, host: ContainerHost, spec: ContainerSpec, container: Container, *, reap: bool = True) -> None:
        """``reap=False``: each command runs under its deadline alone, without the final kill (a
        snapshot helper, whose kill would reach the sandbox whose PID namespace it shares, and
        its own keep-alive)."""
        super().__init__(spec.workdir)
        self.backend = host
        self.spec = spec
        self.container = container
        self.reap = reap
        self.id = container_id_of(container)
        # The key of the pristine content it was seeded with (``ImageSeeds.seed_with_key``); None: empty.
        self.seeded: tuple[str, tuple[str, ...]] | None = None
        with LIVE_LOCK:
            LIVE.add(self.id)
        self._finalizer = weakref.finalize(self, remove_container, host.client, self.id)

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
        stdout_to: ByteSink | None = None,
    ) -> RawResult:
        api = self.backend.client.api
        seconds = f"{max(timeout, 0.01):.3f}"
        started = time.monotonic()
        try:
            tools = self.spec.tools
            command = (
                [*tools.sh, "-c", _exec_wrapper(tools), "sh", seconds, *argv]
                if self.reap
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

    def snapshot(self) -> Snapshot:
        with self._lock:
            self._check_alive()
            return self.backend._snapshot(self)

    def destroy(self) -> None:
        with self._lock:
            self._destroyed = True
            self._finalizer()


def destroy_sandbox(sandbox: DockerSandbox) -> None:
    sandbox.destroy()


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


def start(host: ContainerHost, spec: ContainerSpec) -> DockerSandbox:
    """A started container of ``spec``, its writable directories empty."""
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
    with creating("sandbox") as labels:
        return run_container(host, spec, command, tmpfs, volumes, labels)


def run_container(
    host: ContainerHost,
    spec: ContainerSpec,
    command: list[str],
    tmpfs: dict[str, str],
    volumes: dict[str, dict[str, str]],
    labels: dict[str, str],
    *,
    pid_mode: str | None = None,
    reap: bool = True,
) -> DockerSandbox:
    limits = spec.limits
    disk_bytes = limits.disk_mb * 1024 * 1024
    try:
        container = host.client.containers.run(
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
    return DockerSandbox(host, spec, container, reap=reap)
