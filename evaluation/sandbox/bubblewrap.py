"""The "local" backend: bubblewrap sandboxes on the host, no daemon.

Layout and why:

* **System**: the debootstrap tree, top-level entries bound read-only into
  bwrap's own tmpfs root (then remounted read-only). Binding entries one by one
  rather than the whole tree at "/" lets a workdir such as /workspace, which the
  tree lacks, be created as a mount point.
* **Writable state**: one host tmpfs per sandbox, mounted at
  ``<state_dir>/<id>/rw`` with ``size=disk_mb``; the writable directories
  (``WRITABLE_SYSTEM_DIRS`` + the workdir's top-level dir) are subdirectories of
  it, seeded with the tree's content and bound read-write. One tmpfs for all of
  them makes ``disk_mb`` an exact total cap that fails writes with ENOSPC and
  never touches the host disk. The state persists across execs (each exec is a
  new bwrap process) because it lives on the host, and snapshot/restore is then a
  ``cp -a`` between tmpfs mounts (no process runs during it: see below).
* **Identity**: each sandbox runs as its own random host uid (mapped to root
  inside with ``--unshare-user --uid 0``), its writable tree chowned to it. So
  "root" inside owns its files but is an unprivileged stranger to the host, and
  RLIMIT_NPROC, which the kernel counts per uid, becomes a per-sandbox process cap.
* **Limits**: cgroup v1 pids/memory/cpu controllers (this host has a hybrid
  hierarchy where they are writable) per sandbox; when they cannot be used, the
  fallback is prlimit NPROC (per-sandbox thanks to the private uid) and AS for
  memory. cgroup v2 is not implemented and takes the fallback. ``--fsize`` caps
  single files at disk_mb in every case. The disk cap includes the ~8 MB of
  /etc, /var... copied in; /dev/shm is a separate 64 MiB tmpfs per exec. tmpfs
  pages are charged to the memory cgroup of the process writing them.
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
* **Test phase** (``LocalSnapshot.verify``): the copy of the final state gets
  two more read-only binds, the verifier runtime at ``VERIFIER_MOUNT`` and a
  host directory holding only the test module at ``TESTS_MOUNT``, both written
  by the host outside the copy's tmpfs; anything the agent left at
  /etc/ld.so.preload is replaced by an empty file on the host side before the
  copy's first process starts. The verifier is the only process that copy runs.
* **Snapshots and archives**: a snapshot's files belong to a uid of its own.
  ``export`` runs ``tar -c`` in a helper sandbox as that uid, with the
  snapshot bound read-only at ``/.veriharm-state`` and the pristine tree's /etc
  (so nothing of the agent's loader configuration applies); the host only
  compresses the stream. ``restore_archive`` unpacks an archive with ``tar -x``
  inside a fresh sandbox whose writable directories start empty.

Needs root on the host (tmpfs mounts, setuid to the sandbox uid, cgroups). If a
directory above the root tree is closed to other users (e.g. a checkout under a
0700 temp dir), the tree is exposed to the sandbox uids through a read-only bind
mount ``<state_dir>/root-<hash>``, left in place for later sandboxes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from . import host_fs
from .base import (
    BASE_ENV,
    DEFAULT_SETUP_TIMEOUT,
    INTERNAL_TIMEOUT,
    MAX_OUTPUT_BYTES,
    PRELOAD_PATH,
    SANDBOX_HOME,
    SANDBOX_HOSTNAME,
    TAR,
    TESTS_MOUNT,
    VERIFIER_MOUNT,
    ArchiveInfo,
    CommandSandbox,
    Environment,
    ExecResult,
    GzipArchiveWriter,
    Limits,
    OutputCollector,
    RawResult,
    SandboxBackend,
    SandboxError,
    Snapshot,
    UseGate,
    hidden_test_name,
    inode_cap,
    plan_writable_mounts,
    read_identity,
)
from .images import (
    DEFAULT_IMAGE,
    TREE_IDENTITY,
    VERIFIER_IDENTITY,
    default_image,
    require_root_tree,
    require_verifier_root,
    sandbox_root,
)
from .network import GATEWAY_MOUNT, GATEWAY_SOCKET, HARNESS_MOUNT, ModelAccess, forwarder_argv
from .pool import WarmPool

# Private uids are drawn from this range; nothing else on a normal host uses it.
UID_BASE = 0x5A000000
UID_SPAN = 1 << 24
# Added to Limits.pids: the outer bwrap and its namespace init (2), plus 2 for the
# init of a just-finished exec, which lingers as a zombie until the host's init
# reaps it (and zombies still count against both pids.max and RLIMIT_NPROC).
PROCESS_OVERHEAD = 4
DEV_SHM_BYTES = 64 * 1024 * 1024
HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
META = "meta.json"
# Where the export helper sees the snapshot it archives.
STATE_MOUNT = "/.veriharm-state"

# Sandboxes and snapshots currently owned by live objects of this process;
# cleanup_orphans leaves them alone.
_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()


def default_state_dir() -> Path:
    return Path(tempfile.gettempdir()) / "veriharm-sandboxes"


# --------------------------------------------------------------------------- host helpers


def _run_host(argv: list[str], *, timeout: float = 120.0) -> None:
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if completed.returncode != 0:
        raise SandboxError(f"{argv[0]} failed: {(completed.stderr or completed.stdout).strip()}")


def _process_start_time(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot, or None if it is gone.

    Paired with the pid it identifies a process even after the pid is reused.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after it.
    return int(stat.rsplit(")", 1)[1].split()[19])


def _owner_alive(pid: int, start_time: int | None) -> bool:
    current = _process_start_time(pid)
    return current is not None and current == start_time


def _is_mountpoint(path: Path) -> bool:
    target = os.fsencode(str(path))
    try:
        with open("/proc/self/mountinfo", "rb") as mounts:
            return any(line.split()[4] == target for line in mounts)
    except OSError:
        return False


def _mount_tmpfs(path: Path, size_mb: int, mode: int) -> None:
    # nr_inodes: millions of empty files would cost no bytes but make snapshots crawl.
    try:
        host_fs.mount_tmpfs(path, f"size={size_mb}m,nr_inodes={inode_cap(size_mb)},mode={mode:o}")
    except OSError as exc:
        raise SandboxError(str(exc)) from exc


def _unmount(path: Path) -> None:
    if _is_mountpoint(path):
        host_fs.unmount(path)


def _pids_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) processes whose real uid is ``uid``."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                zombie = False
                for line in status:
                    if line.startswith(b"State:"):
                        # A zombie has released everything; it only waits for its
                        # (re)parent to reap it, which for bwrap's namespace init is
                        # the host's init, on its own schedule.
                        zombie = line.split()[1] in (b"Z", b"X")
                    elif line.startswith(b"Uid:"):
                        if not zombie and int(line.split()[1]) == uid:
                            pids.append(int(entry.name))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _kill_uid(uid: int, deadline: float = 5.0) -> None:
    """SIGKILL every process running as the sandbox's private uid, until none is left."""
    end = time.monotonic() + deadline
    while True:
        pids = _pids_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > end:
            raise SandboxError(f"processes of sandbox uid {uid} survive SIGKILL: {pids}")
        time.sleep(0.02)


# --------------------------------------------------------------------------- cgroups (v1)


def _v1_controller_dirs() -> dict[str, Path]:
    """This process's cgroup directory for each v1 controller we use."""
    own: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path
    except OSError:
        return {}
    result: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(rfields) < 3 or rfields[0] != "cgroup":
            continue
        options = set(rfields[2].split(","))
        mount_root, mount_point = fields[3], fields[4]
        for controller in ("pids", "memory", "cpu"):
            if controller in options and controller in own and controller not in result:
                relative = os.path.relpath(own[controller], mount_root)
                result[controller] = Path(mount_point) / ("" if relative == "." else relative)
    return result


@dataclass
class CgroupSet:
    """Per-sandbox cgroups, controller -> directory; empty when cgroups are unusable here."""

    dirs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, name: str, limits: Limits, uid: int) -> CgroupSet:
        # The writable tmpfs is charged to this cgroup as well: room for the
        # processes plus a full writable area, as in the docker backend.
        memory = str((limits.memory_mb + limits.disk_mb) * 1024 * 1024)
        settings: dict[str, list[tuple[str, str]]] = {
            "pids": [("pids.max", str(limits.pids + PROCESS_OVERHEAD))],
            # memsw (only present with swap accounting) closes the swap escape hatch.
            "memory": [("memory.limit_in_bytes", memory), ("memory.memsw.limit_in_bytes", memory)],
            "cpu": [("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", str(max(1000, int(limits.cpus * 100000))))],
        }
        made = cls()
        for controller, parent in _v1_controller_dirs().items():
            directory = parent / name
            try:
                directory.mkdir()
            except OSError:
                continue  # not writable / not delegated: the prlimit fallback covers it
            made.dirs[controller] = str(directory)
            try:
                for filename, value in settings[controller]:
                    target = directory / filename
                    if target.exists():
                        target.write_text(value)
                # The attach shell runs as the sandbox uid and moves itself in.
                os.chown(directory / "cgroup.procs", uid, -1)
            except OSError:
                cls.remove_dir(directory)
                del made.dirs[controller]
        return made

    def has(self, controller: str) -> bool:
        return controller in self.dirs

    def procs_files(self) -> list[str]:
        return [str(Path(d) / "cgroup.procs") for d in self.dirs.values()]

    def kill_all(self, deadline: float = 5.0) -> None:
        end = time.monotonic() + deadline
        for directory in self.dirs.values():
            procs = Path(directory) / "cgroup.procs"
            while True:
                try:
                    pids = [int(p) for p in procs.read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                if time.monotonic() > end:
                    raise SandboxError(f"processes in {directory} survive SIGKILL: {pids}")
                time.sleep(0.02)

    @staticmethod
    def remove_dir(directory: Path) -> None:
        for _ in range(100):
            try:
                directory.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)  # exiting tasks may linger a moment

    def remove(self) -> None:
        for directory in self.dirs.values():
            self.remove_dir(Path(directory))


# --------------------------------------------------------------------------- teardown


def _teardown(directory: Path, uid: int | None, cgroups: Mapping[str, str], sid: str) -> None:
    """Kill, unmount, delete. Safe to call repeatedly and on partial state."""
    group = CgroupSet(dict(cgroups))
    try:
        with contextlib.suppress(SandboxError):
            group.kill_all()
        if uid is not None:
            _kill_uid(uid)
        group.remove()
        _unmount(directory / "gateway" / Path(GATEWAY_SOCKET).name)
        _unmount(directory / "rw")
        shutil.rmtree(directory, ignore_errors=True)
    finally:
        # Even after a failure: no longer "in use", so cleanup_orphans retries it.
        with _LIVE_LOCK:
            _LIVE.discard(sid)


def _chown_tree(rw: Path, uid: int) -> None:
    """Give everything under rw to uid (never through a symlink), setuid/setgid bits kept."""
    host_fs.chown_tree(rw, uid)


def _mask_preload(rw: Path) -> None:
    """Replace whatever the agent left at /etc/ld.so.preload by an empty file (see base).

    Host side, before any process of the copy starts, without following anything:
    /etc is a bind mount point in every sandbox, so the agent cannot have replaced
    it by a symlink, and the entry itself is only lstat-ed, unlinked or removed as
    a tree (rmtree does not follow symlinks).
    """
    etc = rw / "etc"
    if not stat.S_ISDIR(os.lstat(etc).st_mode):
        raise SandboxError(f"{etc} is not a directory")
    target = rw / PRELOAD_PATH.lstrip("/")
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(target)
    else:
        target.unlink()
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    os.close(descriptor)


# --------------------------------------------------------------------------- sandbox


@dataclass(frozen=True)
class _Spec:
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


class LocalSandbox(CommandSandbox):
    def __init__(self, backend: BubblewrapBackend, spec: _Spec, sid: str, uid: int) -> None:
        super().__init__(spec.workdir)
        self.backend = backend
        self.id = sid
        self.uid = uid
        self.spec = spec
        self.directory = backend.state_dir / sid
        self.cgroups = CgroupSet()
        self._finalizer = weakref.finalize(self, _teardown, self.directory, uid, {}, sid)

    # The cgroups are only known after create; keep the finalizer's copy in sync.
    def _set_cgroups(self, cgroups: CgroupSet) -> None:
        self.cgroups = cgroups
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _teardown, self.directory, self.uid, dict(cgroups.dirs), self.id)

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
        _run_host(["mount", "--bind", str(model.socket_path), str(target)])
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
        stdout_to: GzipArchiveWriter | None = None,
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
        _kill_uid(self.uid)
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
    def snapshot(self) -> LocalSnapshot:
        with self._lock:
            self._check_alive()
            return self.backend._snapshot(self)

    def final_snapshot(self) -> LocalSnapshot:
        """The sandbox's own writable tmpfs becomes the snapshot: no copy. The sandbox counts as
        destroyed from here on (its processes killed, its cgroups and model access gone)."""
        with self._lock:
            self._check_alive()
            self._destroyed = True
            self._finalizer.detach()
            snapshot = LocalSnapshot(self.backend, replace(self.spec, gateway=None, harness=None), self.id, self.uid)
            snapshot._finalizer.detach()
            snapshot._finalizer = weakref.finalize(
                snapshot, _teardown, self.directory, self.uid, dict(self.cgroups.dirs), self.id
            )
            try:
                self.cgroups.kill_all()
                _kill_uid(self.uid)
                self.cgroups.remove()
                _unmount(self.directory / "gateway" / Path(GATEWAY_SOCKET).name)
                # As a copied snapshot is: its uid's alone (the export helper runs as that uid).
                os.chown(self.rw, self.uid, self.uid)
                os.chmod(self.rw, 0o700)
                meta_path = self.directory / META
                record = json.loads(meta_path.read_text())
                meta_path.write_text(json.dumps({**record, "kind": "snap", "source": self.id}))
            except BaseException:
                snapshot.discard()
                raise
            return snapshot

    def destroy(self) -> None:
        with self._lock:
            self._destroyed = True
            self._finalizer()  # runs _teardown once; later calls are no-ops


def _destroy(sandbox: LocalSandbox) -> None:
    sandbox.destroy()


def _status(returncode: int) -> int:
    # Popen reports death by signal as -N; a shell would say 128+N.
    return 128 - returncode if returncode < 0 else returncode


def _pump(stream: IO[bytes] | None, sink: OutputCollector | GzipArchiveWriter) -> None:
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


class LocalSnapshot(Snapshot):
    def __init__(self, backend: BubblewrapBackend, spec: _Spec, sid: str, uid: int) -> None:
        self.backend = backend
        self.spec = spec
        self.id = sid
        self.uid = uid  # owns the snapshot's files; the export helper runs as it
        self.directory = backend.state_dir / sid
        self._gate = UseGate()
        self._export_lock = threading.Lock()  # the helper's processes are killed by uid: one at a time
        self._finalizer = weakref.finalize(self, _teardown, self.directory, uid, {}, sid)

    def restore(self) -> LocalSandbox:
        with self._gate.use():
            return self.backend._materialize(self.spec, seed_from=self.directory / "rw")

    def verify(self, test_source: str, timeout: float) -> ExecResult:
        name = f"{hidden_test_name()}.py"
        with self._gate.use():
            spec = self.backend._test_spec(self.spec)
            sandbox = self.backend._materialize(
                spec,
                seed_from=self.directory / "rw",
                test=(name, test_source.encode()),
                shell=self.backend._test_pool.take(spec),
            )
        try:
            return sandbox._verify(f"{TESTS_MOUNT}/{name}", timeout)
        finally:
            sandbox.destroy()

    def export(self, path: Path, *, max_bytes: int) -> ArchiveInfo:
        with self._gate.use(), self._export_lock:
            rw = self.directory / "rw"
            members = [m.lstrip("/") for m in self.spec.mounts if (rw / m.lstrip("/")).is_dir()]
            # No writable directory of its own, the pristine tree's /etc: tar runs on a
            # clean system and only reads the snapshot.
            spec = replace(self.spec, mounts=(), verifier=None, state=str(rw))
            helper = LocalSandbox(self.backend, spec, f"exp-{secrets.token_hex(6)}", self.uid)
            writer = GzipArchiveWriter(path, max_bytes)
            try:
                result = helper._run(
                    [TAR, "-C", STATE_MOUNT, "-c", "-f", "-", "--numeric-owner", *members],
                    timeout=INTERNAL_TIMEOUT,
                    cwd="/",
                    output_limit=64 * 1024,
                    stdout_to=writer,
                )
            except BaseException:
                writer.abort()
                raise
            finally:
                helper._finalizer.detach()  # its uid is the snapshot's: teardown is the snapshot's job
                _kill_uid(self.uid)
            if result.exit_code not in (0, 1) and writer.overflow is None:
                writer.abort()
                detail = result.stderr.decode("utf-8", "replace").strip()
                raise SandboxError(f"export of snapshot {self.id} failed: {detail or result.exit_code}")
            return writer.finish()

    def discard(self) -> None:
        self._gate.close()
        self._finalizer()


# --------------------------------------------------------------------------- backend


class BubblewrapBackend(SandboxBackend):
    name = "local"

    def __init__(
        self,
        *,
        root: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        setup_timeout: float = DEFAULT_SETUP_TIMEOUT,
        pool_size: int = 0,
        pool_environments: int = 4,
    ) -> None:
        """``pool_size``: trials' worth of sandboxes kept ready per environment (0: none), for at
        most ``pool_environments`` environments (see evaluation.sandbox.pool)."""
        self.root = Path(root) if root else sandbox_root()
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.setup_timeout = setup_timeout
        self._identities: dict[str, str] = {}
        # Agent sandboxes seeded from the system tree, and test-phase shells (a mounted, empty
        # tmpfs with its uid and cgroups; two per trial), per sandbox spec.
        self._agent_pool: WarmPool[_Spec, LocalSandbox] = WarmPool(
            "local-agent",
            lambda spec: self._materialize(spec, seed_from=None),
            _destroy,
            size=pool_size,
            max_keys=pool_environments,
        )
        self._test_pool: WarmPool[_Spec, LocalSandbox] = WarmPool(
            "local-test", self._shell, _destroy, size=2 * pool_size, max_keys=pool_environments
        )

    def pooled(self) -> list:
        """Every sandbox the pools hold ready now."""
        return [*self._agent_pool.members(), *self._test_pool.members()]

    def wait_warm(self, environment: Environment, limits: Limits | None = None, timeout: float = 60.0) -> bool:
        """Ask for ``environment``'s sandboxes to be kept ready and wait until they are (True), at
        most ``timeout`` seconds."""
        spec = self._spec(environment, limits or Limits())
        self._agent_pool.warm(spec)
        self._test_pool.warm(self._test_spec(spec))
        return self._agent_pool.wait_ready(spec, timeout) and self._test_pool.wait_ready(self._test_spec(spec), timeout)

    def wait_pools_idle(self, timeout: float = 60.0) -> bool:
        """Until the pools build nothing and want nothing (True), at most ``timeout`` seconds each."""
        return self._agent_pool.wait_idle(timeout) and self._test_pool.wait_idle(timeout)

    def drain_pools(self) -> None:
        """Destroy every sandbox kept ready (the pools stop refilling)."""
        self._agent_pool.drain()
        self._test_pool.drain()

    # -- checks ----------------------------------------------------------------
    def _preflight(self) -> Path:
        """Check the host can run sandboxes; returns the root tree path bwrap should bind."""
        if os.geteuid() != 0:
            raise SandboxError("the local backend needs root (per-sandbox uids, tmpfs mounts, cgroups)")
        for tool in ("bwrap", "prlimit", "mount", "cp"):
            if shutil.which(tool) is None:
                raise SandboxError(f"the local backend needs {tool!r} on PATH")
        require_root_tree(self.root)
        # The sandbox uids must be able to traverse the state dir (and the tree).
        self.state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state_dir, 0o711)
        return self._reachable_root()

    def _reachable_root(self) -> Path:
        return self._reachable(self.root.resolve(), "root")

    def _reachable_verifier(self) -> Path:
        return self._reachable(require_verifier_root().resolve(), "verifier")

    def _reachable(self, root: Path, kind: str) -> Path:
        """A host directory (the tree, the verifier) at a path the sandbox uids can traverse.

        bwrap runs as the sandbox uid, so every directory above the tree needs
        o+x. When one does not have it (e.g. a checkout under a 0700 mktemp dir),
        the tree is exposed through a read-only bind mount in the state dir.
        """
        if all(os.stat(p).st_mode & 0o001 for p in (root, *root.parents)):
            return root
        target = self.state_dir / f"{kind}-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"
        with open(self.state_dir / ".root.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _is_mountpoint(target):
                mounted, wanted = os.stat(target), os.stat(root)
                if (mounted.st_dev, mounted.st_ino) == (wanted.st_dev, wanted.st_ino):
                    return target
                _unmount(target)  # the tree was rebuilt since: bind the new one
            target.mkdir(mode=0o755, exist_ok=True)
            _run_host(["mount", "--bind", "-o", "ro", str(root), str(target)])
        return target

    def _new_dir(self, kind: str, meta: dict[str, Any]) -> tuple[str, Path]:
        sid = f"{kind}-{secrets.token_hex(6)}"
        directory = self.state_dir / sid
        directory.mkdir(mode=0o711)
        with _LIVE_LOCK:
            _LIVE.add(sid)
        record = {
            "kind": kind,
            "owner_pid": os.getpid(),
            "owner_start": _process_start_time(os.getpid()),
            "created": time.time(),
            **meta,
        }
        (directory / META).write_text(json.dumps(record))
        return sid, directory

    # -- create / restore ---------------------------------------------------------
    def _spec(self, environment: Environment, limits: Limits) -> _Spec:
        root = self._preflight()
        if environment.image not in (None, DEFAULT_IMAGE, default_image()):
            # Silently running on another system than the task asked for would
            # make results meaningless.
            raise SandboxError(
                f"the local backend only has the default sandbox system; image {environment.image!r} "
                "needs the docker backend"
            )
        return _Spec(
            workdir=environment.workdir,
            mounts=plan_writable_mounts(environment),
            limits=limits,
            root=str(root),
        )

    def create(
        self, environment: Environment, limits: Limits = Limits(), *, model: ModelAccess | None = None
    ) -> LocalSandbox:
        spec = self._spec(environment, limits)
        harness = self._reachable(model.harness_root.resolve(), "harness") if model and model.harness_root else None
        sandbox = self._agent_pool.take(spec) or self._materialize(spec, seed_from=None)
        if self._test_pool.enabled:
            # This trial's test phase will want its shells too: make them now.
            self._test_pool.warm(self._test_spec(spec))
        try:
            if model is not None:
                sandbox._attach_model(model, harness)
            sandbox._apply_environment(environment, self.setup_timeout)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def restore_archive(self, environment: Environment, limits: Limits, path: Path) -> LocalSandbox:
        sandbox = self._materialize(self._spec(environment, limits), seed_from=None, empty=True)
        try:
            # An archive of a local sandbox only has uid 0, the one identity a local sandbox
            # has; one with other owners (e.g. from docker) is refused by the unpacking.
            sandbox.unpack_archive(path)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def system_identity(self, environment: Environment) -> str:
        key = str(self.root)
        identity = self._identities.get(key)
        if identity is None:
            tree = read_identity(self.root / TREE_IDENTITY, "sandbox tree")
            verifier = read_identity(require_verifier_root() / VERIFIER_IDENTITY, "verifier runtime")
            identity = self._identities[key] = f"local tree {tree} verifier {verifier}"
        return identity

    def _test_spec(self, spec: _Spec) -> _Spec:
        return replace(spec, gateway=None, harness=None, verifier=str(self._reachable_verifier()))

    def _shell(self, spec: _Spec) -> LocalSandbox:
        """A sandbox with its own uid, an empty writable tmpfs and its cgroups, nothing in it yet."""
        spec = replace(spec, root=str(self._preflight()))
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        sid, directory = self._new_dir("sbx", {"uid": uid, "cgroups": {}})
        sandbox = LocalSandbox(self, spec, sid, uid)
        try:
            rw = directory / "rw"
            rw.mkdir(mode=0o711)
            _mount_tmpfs(rw, spec.limits.disk_mb, 0o711)
            cgroups = CgroupSet.create(sid, spec.limits, uid)
            sandbox._set_cgroups(cgroups)
            meta_path = directory / META
            record = json.loads(meta_path.read_text())
            record["cgroups"] = cgroups.dirs
            meta_path.write_text(json.dumps(record))
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _materialize(
        self,
        spec: _Spec,
        seed_from: Path | None,
        *,
        empty: bool = False,
        test: tuple[str, bytes] | None = None,
        shell: LocalSandbox | None = None,
    ) -> LocalSandbox:
        """A sandbox whose writable tree is seeded from the root tree or a snapshot copy
        (or left empty); ``test`` (name, content) makes it a test-phase copy. ``shell`` is one
        ``_shell`` made earlier for the same spec (a pool's), else one is made now."""
        sandbox = shell or self._shell(spec)
        spec, rw = sandbox.spec, sandbox.rw
        try:
            if empty:
                for mount in spec.mounts:
                    (rw / mount.lstrip("/")).mkdir(mode=0o755, parents=True, exist_ok=True)
            elif seed_from is None:
                self._seed_from_root(spec, rw)
            else:
                # -a keeps symlinks as symlinks: the copy never follows what the agent made.
                _run_host(["cp", "-a", "--reflink=auto", f"{seed_from}/.", f"{rw}/"])
                # cp also copied the snapshot's (private) owner and mode onto rw itself.
                os.chown(rw, 0, 0)
                os.chmod(rw, 0o711)
            if test is not None:
                _mask_preload(rw)
                sandbox.tests.mkdir(mode=0o755)
                (sandbox.tests / test[0]).write_bytes(test[1])
                os.chmod(sandbox.tests / test[0], 0o644)
            # Everything writable belongs to the sandbox uid ("root" inside). -h: a
            # symlink's own owner changes, never its target's.
            _chown_tree(rw, sandbox.uid)
        except BaseException:
            sandbox.destroy()
            raise
        return sandbox

    def _seed_from_root(self, spec: _Spec, rw: Path) -> None:
        root = Path(spec.root)
        for mount in spec.mounts:
            source = root / mount.lstrip("/")
            target = rw / mount.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir() and not source.is_symlink():
                _run_host(["cp", "-a", "--reflink=auto", str(source), str(target)])
            else:
                target.mkdir(mode=0o1777 if mount == "/tmp" else 0o755, exist_ok=True)
        home = rw / SANDBOX_HOME.lstrip("/")
        home.mkdir(mode=0o700, exist_ok=True)

    def _snapshot(self, sandbox: LocalSandbox) -> LocalSnapshot:
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        sid, directory = self._new_dir("snap", {"source": sandbox.id, "uid": uid})
        # The copies of a snapshot (restores, test phase) have no model access.
        snapshot = LocalSnapshot(self, replace(sandbox.spec, gateway=None, harness=None), sid, uid)
        try:
            rw = directory / "rw"
            rw.mkdir(mode=0o711)
            _mount_tmpfs(rw, sandbox.spec.limits.disk_mb, 0o700)
            # No process runs in the sandbox between execs, and execs hold the
            # sandbox lock we are under: the copy is consistent.
            _run_host(["cp", "-a", "--reflink=auto", f"{sandbox.rw}/.", f"{rw}/"])
            # A uid of its own, so that the export helper can read it (as that uid)
            # without sharing a uid with a live sandbox. cp gave rw itself the source's
            # owner and mode; the helper opens it as its "root".
            _chown_tree(rw, uid)
            os.chown(rw, uid, uid)
            os.chmod(rw, 0o700)
        except BaseException:
            snapshot.discard()
            raise
        return snapshot

    # -- orphans -----------------------------------------------------------------
    def cleanup_orphans(self) -> int:
        if not self.state_dir.is_dir():
            return 0
        removed = 0
        me = os.getpid()
        for directory in self.state_dir.iterdir():
            # Only sandbox and snapshot dirs: never the root tree's bind mount.
            if not directory.name.startswith(("sbx-", "snap-")) or not directory.is_dir():
                continue
            try:
                record = json.loads((directory / META).read_text())
            except (OSError, ValueError):
                # Killed between mkdir and writing the record: only a stale one is ours to judge.
                if time.time() - directory.stat().st_mtime > 300:
                    _teardown(directory, None, {}, directory.name)
                continue
            pid, start = record.get("owner_pid"), record.get("owner_start")
            with _LIVE_LOCK:
                live_here = directory.name in _LIVE
            if pid == me and live_here:
                continue
            if pid != me and _owner_alive(int(pid), start):
                continue
            _teardown(directory, record.get("uid"), record.get("cgroups") or {}, directory.name)
            if record.get("kind") == "sbx":
                removed += 1
        return removed
