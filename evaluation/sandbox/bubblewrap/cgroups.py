"""Per-sandbox cgroups (v1 pids, memory and cpu controllers).

This host has a hybrid hierarchy where they are writable; when they cannot be used, the sandbox
falls back to prlimit NPROC (per-sandbox thanks to its private uid) and AS for memory. cgroup v2
is not implemented and takes the fallback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..environment import Limits, SandboxError

# Added to Limits.pids: the outer bwrap and its namespace init (2), plus 2 for the
# init of a just-finished exec, which lingers as a zombie until the host's init
# reaps it (and zombies still count against both pids.max and RLIMIT_NPROC).
PROCESS_OVERHEAD = 4


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
