"""What the tree backend does on the host itself: commands, tmpfs mounts, ownership, and the
processes of a sandbox's private uid."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from .. import host_fs
from ..environment import SandboxError, inode_cap


def run_host(argv: list[str], *, timeout: float = 120.0) -> None:
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if completed.returncode != 0:
        raise SandboxError(f"{argv[0]} failed: {(completed.stderr or completed.stdout).strip()}")


def process_start_time(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot, or None if it is gone.

    Paired with the pid it identifies a process even after the pid is reused.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after it.
    return int(stat.rsplit(")", 1)[1].split()[19])


def owner_alive(pid: int, start_time: int | None) -> bool:
    current = process_start_time(pid)
    return current is not None and current == start_time


def is_mountpoint(path: Path) -> bool:
    target = os.fsencode(str(path))
    try:
        with open("/proc/self/mountinfo", "rb") as mounts:
            return any(line.split()[4] == target for line in mounts)
    except OSError:
        return False


def mount_tmpfs(path: Path, size_mb: int, mode: int) -> None:
    # nr_inodes: millions of empty files would cost no bytes but make snapshots crawl.
    try:
        host_fs.mount_tmpfs(path, f"size={size_mb}m,nr_inodes={inode_cap(size_mb)},mode={mode:o}")
    except OSError as exc:
        raise SandboxError(str(exc)) from exc


def unmount(path: Path) -> None:
    if is_mountpoint(path):
        host_fs.unmount(path)


def pids_of_uid(uid: int) -> list[int]:
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


def kill_uid(uid: int, deadline: float = 5.0) -> None:
    """SIGKILL every process running as the sandbox's private uid, until none is left."""
    end = time.monotonic() + deadline
    while True:
        pids = pids_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > end:
            raise SandboxError(f"processes of sandbox uid {uid} survive SIGKILL: {pids}")
        time.sleep(0.02)


def chown_tree(rw: Path, uid: int) -> None:
    """Give everything under rw to uid (never through a symlink), setuid/setgid bits kept."""
    host_fs.chown_tree(rw, uid)
