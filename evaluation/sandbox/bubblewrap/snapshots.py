"""Snapshots (final-state capture) of the tree backend, their test phase and their archives.

* **Snapshots**: a ``cp -a`` of a sandbox's writable tmpfs into one of the snapshot's own (no
  process runs during it), or, for the trial's final state, the sandbox's own tmpfs handed over.
  A snapshot's files belong to a uid of its own.
* **Test phase** (``LocalSnapshot.verify``): the copy of the final state gets two more read-only
  binds, the verifier runtime at ``VERIFIER_MOUNT`` and a host directory holding only the test
  module at ``TESTS_MOUNT``, both written by the host outside the copy's tmpfs; anything the agent
  left at /etc/ld.so.preload is replaced by an empty file on the host side before the copy's first
  process starts. The verifier is the only process that copy runs.
* **Archives**: ``export`` runs ``tar -c`` in a helper sandbox as the snapshot's uid, with the
  snapshot bound read-only at ``/.veriharm-state`` and the pristine tree's /etc (so nothing of the
  agent's loader configuration applies); the host only compresses the stream. ``restore_archive``
  unpacks an archive with ``tar -x`` inside a fresh sandbox whose writable directories start empty.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from ..archives import ArchiveInfo, GzipArchiveWriter
from ..environment import INTERNAL_TIMEOUT, TAR, ExecResult, SandboxError
from ..interface import Snapshot, UseGate
from ..network import GATEWAY_SOCKET
from ..pool import WarmPool
from ..verifier import TESTS_MOUNT, hidden_test_name
from .host import chown_tree, kill_uid, mount_tmpfs, run_host, unmount
from .orphans import META, new_dir, teardown
from .tree import STATE_MOUNT, UID_BASE, UID_SPAN, LocalSandbox, TreeHost, TreeSpec


class SnapshotHost(TreeHost, Protocol):
    """What a snapshot needs of its backend: sandboxes for its copies and its tests."""

    _test_pool: WarmPool[TreeSpec, LocalSandbox]

    def _materialize(
        self,
        spec: TreeSpec,
        seed_from: Path | None,
        *,
        empty: bool = False,
        test: tuple[str, bytes] | None = None,
        shell: LocalSandbox | None = None,
    ) -> LocalSandbox: ...

    def _test_spec(self, spec: TreeSpec) -> TreeSpec: ...


class LocalSnapshot(Snapshot):
    def __init__(self, host: SnapshotHost, spec: TreeSpec, sid: str, uid: int) -> None:
        self.backend = host
        self.spec = spec
        self.id = sid
        self.uid = uid  # owns the snapshot's files; the export helper runs as it
        self.directory = host.state_dir / sid
        self._gate = UseGate()
        self._export_lock = threading.Lock()  # the helper's processes are killed by uid: one at a time
        self._finalizer = weakref.finalize(self, teardown, self.directory, uid, {}, sid)

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
                kill_uid(self.uid)
            if result.exit_code not in (0, 1) and writer.overflow is None:
                writer.abort()
                detail = result.stderr.decode("utf-8", "replace").strip()
                raise SandboxError(f"export of snapshot {self.id} failed: {detail or result.exit_code}")
            return writer.finish()

    def discard(self) -> None:
        self._gate.close()
        self._finalizer()


def copy_snapshot(host: SnapshotHost, sandbox: LocalSandbox) -> LocalSnapshot:
    """A copy of ``sandbox``'s writable tree, a uid of its own owning it."""
    uid = UID_BASE + secrets.randbelow(UID_SPAN)
    sid, directory = new_dir(host.state_dir, "snap", {"source": sandbox.id, "uid": uid})
    # The copies of a snapshot (restores, test phase) have no model access.
    snapshot = LocalSnapshot(host, replace(sandbox.spec, gateway=None, harness=None), sid, uid)
    try:
        rw = directory / "rw"
        rw.mkdir(mode=0o711)
        mount_tmpfs(rw, sandbox.spec.limits.disk_mb, 0o700)
        # No process runs in the sandbox between execs, and execs hold the
        # sandbox lock we are under: the copy is consistent.
        run_host(["cp", "-a", "--reflink=auto", f"{sandbox.rw}/.", f"{rw}/"])
        # A uid of its own, so that the export helper can read it (as that uid)
        # without sharing a uid with a live sandbox. cp gave rw itself the source's
        # owner and mode; the helper opens it as its "root".
        chown_tree(rw, uid)
        os.chown(rw, uid, uid)
        os.chmod(rw, 0o700)
    except BaseException:
        snapshot.discard()
        raise
    return snapshot


def hand_over(host: SnapshotHost, sandbox: LocalSandbox) -> LocalSnapshot:
    """``sandbox``'s own writable tmpfs as a snapshot: no copy. The sandbox counts as destroyed from
    here on (its processes killed, its cgroups and model access gone); its lock is held."""
    sandbox._destroyed = True
    sandbox._finalizer.detach()
    snapshot = LocalSnapshot(host, replace(sandbox.spec, gateway=None, harness=None), sandbox.id, sandbox.uid)
    snapshot._finalizer.detach()
    snapshot._finalizer = weakref.finalize(
        snapshot, teardown, sandbox.directory, sandbox.uid, dict(sandbox.cgroups.dirs), sandbox.id
    )
    try:
        sandbox.cgroups.kill_all()
        kill_uid(sandbox.uid)
        sandbox.cgroups.remove()
        unmount(sandbox.directory / "gateway" / Path(GATEWAY_SOCKET).name)
        # As a copied snapshot is: its uid's alone (the export helper runs as that uid).
        os.chown(sandbox.rw, sandbox.uid, sandbox.uid)
        os.chmod(sandbox.rw, 0o700)
        meta_path = sandbox.directory / META
        record = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**record, "kind": "snap", "source": sandbox.id}))
    except BaseException:
        snapshot.discard()
        raise
    return snapshot
