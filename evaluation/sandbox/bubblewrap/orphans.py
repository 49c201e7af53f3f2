"""Which sandbox and snapshot directories this process owns, their teardown, and the sweep that
removes what a dead owner left behind.

Each directory under the state dir holds a record (``META``) of its owner's pid and start time,
its uid and cgroups; ``cleanup_orphans`` tears down those whose owner is gone, and this process's
own that no live object holds any more.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..environment import SandboxError
from ..network import GATEWAY_SOCKET
from .cgroups import CgroupSet
from .host import kill_uid, owner_alive, process_start_time, unmount

META = "meta.json"

# Sandboxes and snapshots currently owned by live objects of this process;
# cleanup_orphans leaves them alone.
_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()


def default_state_dir() -> Path:
    return Path(tempfile.gettempdir()) / "veriharm-sandboxes"


def teardown(directory: Path, uid: int | None, cgroups: Mapping[str, str], sid: str) -> None:
    """Kill, unmount, delete. Safe to call repeatedly and on partial state."""
    group = CgroupSet(dict(cgroups))
    try:
        with contextlib.suppress(SandboxError):
            group.kill_all()
        if uid is not None:
            kill_uid(uid)
        group.remove()
        unmount(directory / "gateway" / Path(GATEWAY_SOCKET).name)
        unmount(directory / "rw")
        shutil.rmtree(directory, ignore_errors=True)
    finally:
        # Even after a failure: no longer "in use", so cleanup_orphans retries it.
        with _LIVE_LOCK:
            _LIVE.discard(sid)


def new_dir(state_dir: Path, kind: str, meta: dict[str, Any]) -> tuple[str, Path]:
    """A new directory of ``kind`` under ``state_dir``, owned by this process (its record written)."""
    sid = f"{kind}-{secrets.token_hex(6)}"
    directory = state_dir / sid
    directory.mkdir(mode=0o711)
    with _LIVE_LOCK:
        _LIVE.add(sid)
    record = {
        "kind": kind,
        "owner_pid": os.getpid(),
        "owner_start": process_start_time(os.getpid()),
        "created": time.time(),
        **meta,
    }
    (directory / META).write_text(json.dumps(record))
    return sid, directory


def cleanup_orphans(state_dir: Path) -> int:
    """Tear down the directories whose owner is gone; returns how many sandboxes."""
    if not state_dir.is_dir():
        return 0
    removed = 0
    me = os.getpid()
    for directory in state_dir.iterdir():
        # Only sandbox and snapshot dirs: never the root tree's bind mount.
        if not directory.name.startswith(("sbx-", "snap-")) or not directory.is_dir():
            continue
        try:
            record = json.loads((directory / META).read_text())
        except (OSError, ValueError):
            # Killed between mkdir and writing the record: only a stale one is ours to judge.
            if time.time() - directory.stat().st_mtime > 300:
                teardown(directory, None, {}, directory.name)
            continue
        pid, start = record.get("owner_pid"), record.get("owner_start")
        with _LIVE_LOCK:
            live_here = directory.name in _LIVE
        if pid == me and live_here:
            continue
        if pid != me and owner_alive(int(pid), start):
            continue
        teardown(directory, record.get("uid"), record.get("cgroups") or {}, directory.name)
        if record.get("kind") == "sbx":
            removed += 1
    return removed
