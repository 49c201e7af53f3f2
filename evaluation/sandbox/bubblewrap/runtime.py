"""The system tree and the verifier runtime as the sandbox uids reach them: the host's checks
before a sandbox is made, and read-only bind mounts where a directory above a tree is closed.

Needs root on the host (tmpfs mounts, setuid to the sandbox uid, cgroups). If a directory above
the root tree is closed to other users (e.g. a checkout under a 0700 temp dir), the tree is
exposed to the sandbox uids through a read-only bind mount ``<state_dir>/root-<hash>``, left in
place for later sandboxes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from pathlib import Path

from ..environment import SandboxError
from ..images import require_root_tree, require_verifier_root
from .host import is_mountpoint, run_host, unmount


def preflight(root: Path, state_dir: Path) -> Path:
    """Check the host can run sandboxes; returns the root tree path bwrap should bind."""
    if os.geteuid() != 0:
        raise SandboxError("the local backend needs root (per-sandbox uids, tmpfs mounts, cgroups)")
    for tool in ("bwrap", "prlimit", "mount", "cp"):
        if shutil.which(tool) is None:
            raise SandboxError(f"the local backend needs {tool!r} on PATH")
    require_root_tree(root)
    # The sandbox uids must be able to traverse the state dir (and the tree).
    state_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(state_dir, 0o711)
    return reachable(state_dir, root.resolve(), "root")


def reachable_verifier(state_dir: Path) -> Path:
    """The verifier runtime at a path the sandbox uids can traverse."""
    return reachable(state_dir, require_verifier_root().resolve(), "verifier")


def reachable(state_dir: Path, root: Path, kind: str) -> Path:
    """A host directory (the tree, the verifier) at a path the sandbox uids can traverse.

    bwrap runs as the sandbox uid, so every directory above the tree needs
    o+x. When one does not have it (e.g. a checkout under a 0700 mktemp dir),
    the tree is exposed through a read-only bind mount in the state dir.
    """
    if all(os.stat(p).st_mode & 0o001 for p in (root, *root.parents)):
        return root
    target = state_dir / f"{kind}-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"
    with open(state_dir / ".root.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_mountpoint(target):
            mounted, wanted = os.stat(target), os.stat(root)
            if (mounted.st_dev, mounted.st_ino) == (wanted.st_dev, wanted.st_ino):
                return target
            unmount(target)  # the tree was rebuilt since: bind the new one
        target.mkdir(mode=0o755, exist_ok=True)
        run_host(["mount", "--bind", "-o", "ro", str(root), str(target)])
    return target
