"""Filling a sandbox's writable tree: from the system tree, from a snapshot's copy, or empty; and
the test-phase copy's test module and masked /etc/ld.so.preload.

Each is a ``cp -a`` between host directories (a tmpfs to a tmpfs for a snapshot's copy), made while
no process of the sandbox runs."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from ..environment import SANDBOX_HOME, SandboxError
from ..verifier import PRELOAD_PATH
from .host import run_host
from .tree import TreeSpec


def seed_empty(spec: TreeSpec, rw: Path) -> None:
    """The writable directories, empty (an archive is unpacked into them)."""
    for mount in spec.mounts:
        (rw / mount.lstrip("/")).mkdir(mode=0o755, parents=True, exist_ok=True)


def seed_from_root(spec: TreeSpec, rw: Path) -> None:
    """The system tree's content of the writable directories, and the home directory."""
    root = Path(spec.root)
    for mount in spec.mounts:
        source = root / mount.lstrip("/")
        target = rw / mount.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir() and not source.is_symlink():
            run_host(["cp", "-a", "--reflink=auto", str(source), str(target)])
        else:
            target.mkdir(mode=0o1777 if mount == "/tmp" else 0o755, exist_ok=True)
    home = rw / SANDBOX_HOME.lstrip("/")
    home.mkdir(mode=0o700, exist_ok=True)


def seed_from_copy(source: Path, rw: Path) -> None:
    """A copy of a snapshot's writable tree ``source``."""
    # -a keeps symlinks as symlinks: the copy never follows what the agent made.
    run_host(["cp", "-a", "--reflink=auto", f"{source}/.", f"{rw}/"])
    # cp also copied the snapshot's (private) owner and mode onto rw itself.
    os.chown(rw, 0, 0)
    os.chmod(rw, 0o711)


def mask_preload(rw: Path) -> None:
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


def write_test(tests: Path, name: str, content: bytes) -> None:
    """The test module, alone in the host directory bound at ``TESTS_MOUNT``."""
    tests.mkdir(mode=0o755)
    (tests / name).write_bytes(content)
    os.chmod(tests / name, 0o644)
