"""An in-memory stand-in for the sandbox interface, for unit tests of the trial protocol only.

Commands are not executed: a test gives a `handler(sandbox, command) -> ExecResult`
that reads and writes the fake's files. The end-to-end tests use the real backends.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shlex
from collections.abc import Callable
from pathlib import Path

from evaluation.sandbox.base import (
    TESTS_MOUNT,
    ArchiveInfo,
    ArchiveTooLarge,
    Environment,
    ExecResult,
    Limits,
    Sandbox,
    SandboxBackend,
    Snapshot,
    hidden_test_name,
    verifier_argv,
)

Handler = Callable[["FakeSandbox", str], ExecResult]


def ok(stdout: str = "", exit_code: int = 0) -> ExecResult:
    return ExecResult(exit_code=exit_code, stdout=stdout, stderr="", timed_out=False, duration=0.01)


class FakeSandbox(Sandbox):
    def __init__(self, backend: FakeBackend, files: dict[str, bytes], workdir: str) -> None:
        self.backend = backend
        self.files = files
        self.workdir = workdir
        self.commands: list[str] = []
        self.destroyed = False
        backend.live.add(self)

    def _path(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.workdir}/{path}"

    def exec(self, command, timeout, *, env=None, cwd=None) -> ExecResult:
        assert not self.destroyed
        self.commands.append(command)
        self.backend.log.append(command)
        return self.backend.handler(self, command)

    def write_file(self, path, content, mode=0o644) -> None:
        assert not self.destroyed
        self.files[self._path(path)] = content.encode() if isinstance(content, str) else bytes(content)

    def read_file(self, path) -> bytes:
        try:
            return self.files[self._path(path)]
        except KeyError:
            raise FileNotFoundError(path) from None

    def snapshot(self) -> Snapshot:
        return FakeSnapshot(self.backend, dict(self.files), self.workdir)

    def destroy(self) -> None:
        self.destroyed = True
        self.backend.live.discard(self)


class FakeSnapshot(Snapshot):
    def __init__(self, backend: FakeBackend, files: dict[str, bytes], workdir: str) -> None:
        self.backend, self.files, self.workdir = backend, files, workdir
        self.discarded = False
        backend.snapshots.add(self)

    def restore(self) -> Sandbox:
        assert not self.discarded
        return FakeSandbox(self.backend, dict(self.files), self.workdir)

    def discard(self) -> None:
        self.discarded = True
        self.backend.snapshots.discard(self)

    def verify(self, test_source: str, timeout: float) -> ExecResult:
        # The real backends' command line, so handlers see what a real verifier would run.
        sandbox = self.restore()
        try:
            module = f"{TESTS_MOUNT}/{hidden_test_name()}.py"
            sandbox.write_file(module, test_source.encode())
            return sandbox.exec(shlex.join(verifier_argv(module)), timeout)
        finally:
            sandbox.destroy()

    def export(self, path: Path, *, max_bytes: int) -> ArchiveInfo:
        data = gzip.compress(json.dumps({p: c.decode("latin-1") for p, c in self.files.items()}).encode())
        if len(data) > max_bytes:
            raise ArchiveTooLarge(len(data), max_bytes)
        path.write_bytes(data)
        return ArchiveInfo(hashlib.sha256(data).hexdigest(), len(data))


class FakeBackend(SandboxBackend):
    name = "fake"

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.live: set[FakeSandbox] = set()
        self.snapshots: set[FakeSnapshot] = set()
        self.log: list[str] = []
        self.environments: list[Environment] = []
        self.models: list = []

    def create(self, environment: Environment, limits: Limits = Limits(), *, model=None) -> Sandbox:
        self.environments.append(environment)
        self.models.append(model)
        files = {path: content.encode() for path, content in environment.resolved_files().items()}
        return FakeSandbox(self, files, environment.workdir)

    def cleanup_orphans(self) -> int:
        return 0

    def system_identity(self, environment: Environment) -> str:
        return "fake system"

    def restore_archive(self, environment: Environment, limits: Limits, path: Path) -> Sandbox:
        files = json.loads(gzip.decompress(path.read_bytes()))
        return FakeSandbox(self, {p: c.encode("latin-1") for p, c in files.items()}, environment.workdir)
