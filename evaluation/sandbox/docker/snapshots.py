"""Snapshots (final-state capture) and their archives.

* **Snapshot**: a tar of the writable directories streamed into a host file by a helper
  container of the same image that joins the sandbox's PID namespace and reads its files through
  ``/proc/1/root``: no process runs in the sandbox, so nothing runs under the agent's
  /etc/ld.so.preload (the engine's archive calls would not see tmpfs content). Restore starts a
  fresh container from the same image and unpacks it. ``container.commit`` would miss tmpfs
  content, and the read-only root never changes, so the tar is the whole state.
* **Archives**: a snapshot already is a tar on the host, made by the snapshot helper's ``tar``;
  ``export`` only compresses it. ``restore_archive`` unpacks an archive into a fresh container
  whose tmpfs start empty.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
import threading
import weakref
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Protocol

from ..archives import ArchiveInfo, export_tar_file
from ..environment import INTERNAL_TIMEOUT, TAR, ExecResult, SandboxError
from ..interface import Snapshot, UseGate
from ..state_diff import RangeReader, Signature, StateDiff, StateIndex, state_diff
from ..verifier import PRELOAD_PATH, TESTS_MOUNT, hidden_test_name
from .container import DOCKER_MANAGED, ContainerHost, ContainerSpec, DockerSandbox, run_container
from .orphans import creating, remove_file
from .verification import MAX_DELETION_BYTES, Remover, state_then_test

# A snapshot helper (``snapshot_helper``) reads the sandbox's files here: the root of
# the sandbox's PID 1, in the PID namespace they share. Its own life is bounded by this.
SNAPSHOT_SOURCE = "/proc/1/root"
HELPER_LIFETIME = 4 * INTERNAL_TIMEOUT


class SnapshotHost(ContainerHost, Protocol):
    """What a snapshot needs of its backend: containers for its copies and its tests."""

    _remover: Remover

    def _start(self, spec: ContainerSpec) -> DockerSandbox: ...

    def _test_container(self, spec: ContainerSpec) -> DockerSandbox: ...

    def _pristine_manifest(self, spec: ContainerSpec, key: tuple[str, tuple[str, ...]]) -> dict[str, Signature]: ...


class DockerSnapshot(Snapshot):
    def __init__(self, host: SnapshotHost, spec: ContainerSpec, path: Path) -> None:
        self.backend = host
        self.spec = spec
        self.path = path
        self._gate = UseGate()
        self._state_index: StateIndex | None = None
        self._preload: bool | None = None
        self._index_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, remove_file, path)

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
                result = state_then_test(sandbox, module, test_source, preload, archive, deletions, timeout)
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


def take_snapshot(host: SnapshotHost, sandbox: DockerSandbox, path: Path) -> DockerSnapshot:
    """A snapshot of ``sandbox`` in the new file ``path``."""
    # The copies of a snapshot (restores, test phase) have no model access.
    snapshot = DockerSnapshot(host, replace(sandbox.spec, gateway=None, harness=None), path)
    try:
        with open(path, "wb") as archive:
            tar_state(sandbox, archive)
    except BaseException:
        snapshot.discard()
        raise
    return snapshot


def tar_state(sandbox: DockerSandbox, archive: IO[bytes]) -> None:
    """A tar of the container's writable directories into ``archive``, made from outside it.

    Every process started in the container itself loads what its /etc/ld.so.preload names,
    which is the agent's to write, and the engine's archive calls do not see tmpfs content.
    So the tar runs in a snapshot helper (``snapshot_helper``), where the image's own
    loader, tar and /etc apply, and reads the container's files through its PID 1's root:
    nothing runs in the container. (The pristine manifest of ``state_diff`` is made the
    same way, from a freshly seeded container.)"""
    members = [m.lstrip("/") for m in sandbox.spec.mounts]
    excludes = [f"--exclude=./{p}" for p in DOCKER_MANAGED] + [f"--exclude={p}" for p in DOCKER_MANAGED]
    with snapshot_helper(sandbox) as helper:
        result = helper._run(
            [TAR, "-C", SNAPSHOT_SOURCE, "-c", "-f", "-", "--numeric-owner", *excludes, *members],
            timeout=INTERNAL_TIMEOUT,
            cwd="/",
            stdout_to=archive,
            output_limit=64 * 1024,
        )
    # 1 = "some files changed while being read": harmless, nothing runs now.
    if result.exit_code not in (0, 1):
        detail = result.stderr.decode("utf-8", "replace").strip()
        raise SandboxError(f"snapshot of container {sandbox.id[:12]} failed: {detail}")


@contextlib.contextmanager
def snapshot_helper(sandbox: DockerSandbox) -> Iterator[DockerSandbox]:
    """A container of ``sandbox``'s image in ``sandbox``'s PID namespace, for one snapshot.

    Its root is the image's, read-only, with nothing writable: no file of the agent's is on
    its paths, so its loader, tar and libraries are the image's. It has the sandbox's
    capabilities, no fewer (reading another process's root takes as many), and no network.
    It keeps itself alive only for a while and is removed, with its processes, once the tar
    has run; its exec does not end by killing what it sees, which would be the sandbox's."""
    spec = ContainerSpec(image=sandbox.spec.image, workdir="/", mounts=(), limits=sandbox.spec.limits)
    with creating("helper") as labels:
        helper = run_container(
            sandbox.backend,
            spec,
            ["sleep", f"{HELPER_LIFETIME:.0f}"],
            {},
            {},
            labels,
            pid_mode=f"container:{sandbox.id}",
            reap=False,
        )
    try:
        yield helper
    finally:
        helper.destroy()
