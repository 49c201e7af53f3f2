"""A sandbox of the tree backend: its bwrap command line, its limits, and how commands run in it.

* **System**: the debootstrap tree, top-level entries bound read-only into
  bwrap's own tmpfs root (then remounted read-only). Binding entries one by one
  rather than the whole tree at "/" lets a workdir such as /workspace, which the
  tree lacks, be created as a mount point.
* **Writable state**: one host tmpfs per sandbox, mounted at
  ``<state_dir>/<id>/rw`` with ``size=disk_mb``; the writable directories
  (``WRITABLE_SYSTEM_DIRS`` + the workdir's top-level dir) are subdirectories of
  it (``seeding``), bound read-write. One tmpfs for all of them makes ``disk_mb`` an
  exact total cap that fails writes with ENOSPC and never touches the host disk. The
  state persists across execs (each exec is a new bwrap process) because it lives on
  the host.
* **Identity**: each sandbox runs as its own random host uid (mapped to root
  inside with ``--unshare-user --uid 0``), its writable tree chowned to it. So
  "root" inside owns its files but is an unprivileged stranger to the host, and
  RLIMIT_NPROC, which the kernel counts per uid, becomes a per-sandbox process cap.
* **Limits**: the sandbox's cgroups (``cgroups``), or prlimit NPROC and AS when
  there are none. ``--fsize`` caps single files at disk_mb in every case. The disk
  cap includes the ~8 MB of /etc, /var... copied in; /dev/shm is a separate 64 MiB
  tmpfs per exec. tmpfs pages are charged to the memory cgroup of the process
  writing them.
* **Processes**: every exec is a bwrap with a private pid namespace, so when the
  command exits, or bwrap is killed on timeout, the kernel kills everything left
  in the namespace (``sleep &``, ``nohup``, ``setsid`` included). Nothing runs
  between execs.
* **Network**: every bwrap has its own network namespace (``--unshare-all``),
  loopback only; the host's network is never shared. In ``model`` mode
  (``evaluation.sandbox.network``) the trial gateway's socket, which lives in a
  0700 directory of the worker's, is bind-mounted by the host onto a file in a
  root-owned directory of the sandbox's own state dir (``<id>/gateway``), which
  bwrap binds read-only at ``GATEWAY_MOUNT``; the harness runtime, if any, is
  bound read-only at ``HARNESS_MOUNT``; and each ``exec`` starts the forwarder.
  Snapshots and their copies have neither.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Protocol

from ..commands import ByteSink, CommandSandbox, OutputCollector, RawResult
from ..environment import BASE_ENV, MAX_OUTPUT_BYTES, SANDBOX_HOSTNAME, Limits, SandboxError
from ..interface import Snapshot
from ..network import GATEWAY_MOUNT, GATEWAY_SOCKET, HARNESS_MOUNT, ModelAccess, forwarder_argv
from ..verifier import TESTS_MOUNT, VERIFIER_MOUNT
from .cgroups import PROCESS_OVERHEAD, CgroupSet
from .host import kill_uid, run_host
from .orphans import teardown

# Private uids are drawn from this range; nothing else on a normal host uses it.
UID_BASE = 0x5A000000
UID_SPAN = 1 << 24
DEV_SHM_BYTES = 64 * 1024 * 1024
HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# Where the export helper sees the snapshot it archives.
STATE_MOUNT = "/.veriharm-state"


@dataclass(frozen=True)
class TreeSpec:
    """What a sandbox (or a restored copy of it) is made of."""

    workdir: str
    mounts: tuple[str, ...]
    limits: Limits
    root: str
    # Model mode: the host directory holding the gateway's socket (bound at GATEWAY_MOUNT)
    # and the harness runtime (bound at HARNESS_MOUNT); None in mode none.
    gateway: str | None = None
    harness: str | None = None
    # Test phase: the verifier runtime (a host path the sandbox uids can traverse),
    # bound at VERIFIER_MOUNT, and the sandbox's tests directory at TESTS_MOUNT.
    verifier: str | None = None
    # Export helper: a snapshot's state bound read-only at STATE_MOUNT, and the one
    # capability tar needs to read files whatever their mode (e.g. 000).
    state: str | None = None


class TreeHost(Protocol):
    """What a sandbox needs of its backend: where its directory lives, and the making of snapshots."""

    state_dir: Path

    def _snapshot(self, sandbox: LocalSandbox) -> Snapshot: ...

    def _final_snapshot(self, sandbox: LocalSandbox) -> Snapshot: ...


class LocalSandbox(CommandSandbox):
    def __init__(self, host: TreeHost, spec: TreeSpec, sid: str, uid: int) -> None:
        super().__init__(spec.workdir)
        self.backend = host
        self.id = sid
        self.uid = uid
        self.spec = spec
        self.directory = host.state_dir / sid
        self.cgroups = CgroupSet()
        self._finalizer = weakref.finalize(self, teardown, self.directory, uid, {}, sid)

    # The cgroups are only known after create; keep the finalizer's copy in sync.
    def _set_cgroups(self, cgroups: CgroupSet) -> None:
        self.cgroups = cgroups
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, teardown, self.directory, self.uid, dict(cgroups.dirs), self.id)

    @property
    def rw(self) -> Path:
        return self.directory / "rw"

    @property
    def tests(self) -> Path:
        return self.directory / "tests"

    # -- bwrap command line --------------------------------------------------
    def _bwrap_argv(self, argv: list[str], env: Mapping[str, str] | None, cwd: str) -> list[str]:
        spec = self.spec
        root = Path(spec.root)
        args = [
            "bwrap",
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",  # no nested namespaces: less kernel surface for "root" inside
            "--uid", "0", "--gid", "0",
            "--hostname", SANDBOX_HOSTNAME,
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into a terminal of ours
            "--cap-drop", "ALL",
            *(["--cap-add", "CAP_DAC_READ_SEARCH"] if spec.state else []),
            "--clearenv",
        ]  # fmt: skip
        merged = dict(BASE_ENV)
        merged.update(env or {})
        for key, value in merged.items():
            args += ["--setenv", key, value]
        writable = set(spec.mounts)
        top_level_writable = {m for m in writable if m.count("/") == 1}
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            target = "/" + entry.name
            if target in ("/proc", "/dev", "/sys") or target in top_level_writable:
                continue
            if entry.is_symlink():
                args += ["--symlink", os.readlink(entry.path), target]
            elif entry.is_dir():
                args += ["--ro-bind", entry.path, target]
        # Parents before children (plan order), so /usr/local lands on top of /usr.
        for mount in spec.mounts:
            args += ["--bind", str(self.rw / mount.lstrip("/")), mount]
        if spec.verifier:
            args += ["--ro-bind", spec.verifier, VERIFIER_MOUNT, "--ro-bind", str(self.tests), TESTS_MOUNT]
        if spec.state:
            args += ["--ro-bind", spec.state, STATE_MOUNT]
        if spec.gateway:
            args += ["--ro-bind", spec.gateway, GATEWAY_MOUNT]
        if spec.harness:
            args += ["--ro-bind", spec.harness, HARNESS_MOUNT]
        args += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--dir", "/sys",  # exists (some tools probe it) but shows nothing of the host
            "--size", str(DEV_SHM_BYTES), "--tmpfs", "/dev/shm",
            "--remount-ro", "/",
            "--chdir", cwd,
        ]  # fmt: skip
        return args + argv

    def _launcher(self, inner: list[str]) -> list[str]:
        limits = self.spec.limits
        prlimit = [
            "prlimit",
            f"--nproc={limits.pids + PROCESS_OVERHEAD}",
            f"--fsize={limits.disk_mb * 1024 * 1024}",
            "--core=0",
        ]
        if not self.cgroups.has("memory"):
            # Address space is a crude stand-in for a memory cgroup (it counts
            # reservations, not use), but it is what works without one.
            prlimit.append(f"--as={limits.memory_mb * 1024 * 1024}")
        launcher = [*prlimit, "--", *inner]
        procs = self.cgroups.procs_files()
        if procs:
            # Join the cgroups *before* bwrap starts so no child is ever outside them.
            attach = " && ".join(f"echo $$ > '{p}'" for p in procs)
            launcher = ["/bin/sh", "-c", f'{attach} && exec "$@"', "sh", *launcher]
        return launcher

    def _exec_argv(self, argv: list[str]) -> list[str]:
        return forwarder_argv(argv) if self.spec.gateway else argv

    def _attach_model(self, model: ModelAccess, harness: Path | None) -> None:
        """Model mode: the gateway's socket appears, through a bind mount the host makes, in a
        directory of this sandbox's own that its uid can traverse (the gateway's is 0700)."""
        directory = self.directory / "gateway"
        directory.mkdir(mode=0o755)
        target = directory / Path(GATEWAY_SOCKET).name
        target.touch(mode=0o666)
        run_host(["mount", "--bind", str(model.socket_path), str(target)])
        self.spec = replace(self.spec, gateway=str(directory), harness=str(harness) if harness else None)

    # -- primitive -------------------------------------------------------------
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
        command = self._launcher(self._bwrap_argv(argv, env, cwd or self.workdir))
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd="/",
                env={"PATH": HOST_PATH},
                user=self.uid,
                group=self.uid,
                extra_groups=[],
                start_new_session=True,  # its own process group: one killpg reaches bwrap
                close_fds=True,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start bwrap: {exc}") from exc
        out, err = OutputCollector(output_limit), OutputCollector(output_limit)
        threads = [
            threading.Thread(target=_pump, args=(process.stdout, stdout_to or out), daemon=True),
            threading.Thread(target=_pump, args=(process.stderr, err), daemon=True),
        ]
        if stdin is not None:
            threads.append(threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True))
        for thread in threads:
            thread.start()
        timed_out = False
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # Normally bwrap is gone and the pid namespace with it; on timeout or an
            # exception this kills bwrap, whose death tears the namespace down.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        # Belt and braces: nothing of this sandbox may run between execs.
        self.cgroups.kill_all()
        kill_uid(self.uid)
        for thread in threads:
            thread.join(timeout=10)
        duration = time.monotonic() - started
        return RawResult(
            exit_code=None if timed_out else _status(process.returncode),
            stdout=out.data(),
            stderr=err.data(),
            timed_out=timed_out,
            duration=duration,
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
        )

    # -- lifecycle -------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        with self._lock:
            self._check_alive()
            return self.backend._snapshot(self)

    def final_snapshot(self) -> Snapshot:
        """The sandbox's own writable tmpfs becomes the snapshot: no copy. The sandbox counts as
        destroyed from here on (its processes killed, its cgroups and model access gone)."""
        with self._lock:
            self._check_alive()
            return self.backend._final_snapshot(self)

    def destroy(self) -> None:
        with self._lock:
            self._destroyed = True
            self._finalizer()  # runs teardown once; later calls are no-ops


def destroy_sandbox(sandbox: LocalSandbox) -> None:
    sandbox.destroy()


def _status(returncode: int) -> int:
    # Popen reports death by signal as -N; a shell would say 128+N.
    return 128 - returncode if returncode < 0 else returncode


def _pump(stream: IO[bytes] | None, sink: OutputCollector | ByteSink) -> None:
    if stream is None:
        return
    add = sink.add if isinstance(sink, OutputCollector) else sink.write
    with stream:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            add(chunk)


def _feed(stream: IO[bytes] | None, data: bytes | IO[bytes]) -> None:
    if stream is None:
        return
    try:
        if isinstance(data, bytes | bytearray):
            stream.write(data)
        else:
            shutil.copyfileobj(data, stream, 1024 * 1024)
    except (BrokenPipeError, ValueError, OSError, EOFError):
        pass  # the command stopped reading, or the source broke off; its exit status says why
    finally:
        with contextlib.suppress(OSError):
            stream.close()
