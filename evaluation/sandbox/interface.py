"""The interface every backend implements: ``Sandbox``, ``Snapshot`` and ``SandboxBackend``
(the invariants they keep are told in ``evaluation.sandbox.base``), and ``UseGate``, which lets a
snapshot's readers finish before its storage is freed."""

from __future__ import annotations

import contextlib
import pathlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping

from .archives import ArchiveInfo
from .environment import Environment, ExecResult, Limits, SandboxError
from .network import ModelAccess


class Sandbox(ABC):
    """One isolated environment. Not thread-safe for concurrent execs: calls are serialized."""

    workdir: str

    @abstractmethod
    def exec(
        self,
        command: str,
        timeout: float,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``bash -c command`` inside; on timeout every process inside is killed."""

    @abstractmethod
    def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        """Create or replace a file; path relative to workdir or absolute inside the sandbox."""

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """Content of a regular file inside the sandbox; FileNotFoundError when missing."""

    @abstractmethod
    def snapshot(self) -> Snapshot:
        """Freeze the current state of the writable directories."""

    @abstractmethod
    def destroy(self) -> None:
        """Kill every process and remove every trace. Idempotent."""

    def final_snapshot(self) -> Snapshot:
        """``snapshot`` of a sandbox that is never used again: afterwards only ``destroy`` may be
        called (the trial's agent sandbox). A backend may hand the state over instead of copying it."""
        return self.snapshot()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.destroy()


class UseGate:
    """Lets any number of users at a snapshot at once (its tests' copies are made in parallel);
    ``close`` refuses new ones and waits for those inside, so storage is never freed under a reader."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._users = 0
        self.closed = False

    @contextlib.contextmanager
    def use(self) -> Iterator[None]:
        with self._condition:
            if self.closed:
                raise SandboxError("snapshot already discarded")
            self._users += 1
        try:
            yield
        finally:
            with self._condition:
                self._users -= 1
                self._condition.notify_all()

    def close(self) -> None:
        with self._condition:
            self.closed = True
            self._condition.wait_for(lambda: self._users == 0)


class Snapshot(ABC):
    @abstractmethod
    def restore(self) -> Sandbox:
        """A new, independent sandbox whose writable state is a copy of the snapshot."""

    @abstractmethod
    def verify(self, test_source: str, timeout: float) -> ExecResult:
        """Run one pytest module on its own fresh copy of the snapshot, then destroy the copy.

        The module is written in only now, under an unguessable name, outside the agent's
        tree (``TESTS_MOUNT``), and runs with the verifier runtime (``verifier_argv``) in
        ``VERIFIER_ENV``, with the agent's /etc/ld.so.preload masked (``PRELOAD_PATH``).
        """

    def export(self, path: pathlib.Path, *, max_bytes: int) -> ArchiveInfo:
        """Write the snapshot's writable state to ``path`` as a gzip-compressed tar.

        Members are relative to "/" (``etc/passwd``, ``app/solution.sh``), owners
        numeric, symlinks stored as symlinks. Past ``max_bytes`` of compressed output
        the partial file is removed and ArchiveTooLarge raised.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot export archives")

    @abstractmethod
    def discard(self) -> None:
        """Free the snapshot's storage. Idempotent; sandboxes already restored are unaffected."""

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()


class SandboxBackend(ABC):
    name: str

    @abstractmethod
    def create(
        self, environment: Environment, limits: Limits = Limits(), *, model: ModelAccess | None = None
    ) -> Sandbox:
        """A sandbox with the environment's files written and its setup run.

        Network mode ``none`` without ``model``; with it, mode ``model``: the gateway's
        socket and the harness runtime are mounted and every ``exec`` runs beside the
        forwarder (``evaluation.sandbox.network``). Snapshots, restores and test-phase
        copies never get either. A failing setup raises SandboxError carrying the
        setup's output.
        """

    @abstractmethod
    def cleanup_orphans(self) -> int:
        """Remove what this backend left behind in dead processes; returns how many sandboxes."""

    def drain_pools(self) -> None:
        """Destroy every sandbox this backend keeps ready (its warm pools stop refilling), and
        wait for removals under way: what a process calls before it stops normally. A backend
        without pools has nothing to do."""
        return None

    def restore_archive(self, environment: Environment, limits: Limits, path: pathlib.Path) -> Sandbox:
        """A fresh sandbox of ``environment`` (same mounts and workdir) whose writable
        state is the content of an archive ``Snapshot.export`` wrote; the environment's
        files and setup are not applied again."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore archives")

    def load_archive(self, environment: Environment, limits: Limits, path: pathlib.Path) -> Snapshot:
        """A snapshot holding an archive's state, to ``verify`` tests on (re-scoring)."""
        sandbox = self.restore_archive(environment, limits, path)
        try:
            return sandbox.final_snapshot()
        finally:
            sandbox.destroy()

    def system_identity(self, environment: Environment) -> str:
        """What system a sandbox of ``environment`` runs on and which verifier judges it,
        content-derived and stable (e.g. ``local tree sha256:... verifier sha256:...``)."""
        raise NotImplementedError(f"{type(self).__name__} has no system identity")
