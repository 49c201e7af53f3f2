"""The agent sandbox's last snapshot (``Sandbox.final_snapshot``): the same state as a copy, and the
sandbox is over once it is taken."""

from __future__ import annotations

import gzip
import tarfile
from pathlib import Path

import pytest

from evaluation.sandbox import Environment, SandboxBackend, SandboxError
from evaluation.sandbox.bubblewrap import LocalSnapshot
from evaluation.sandbox.bubblewrap.host import pids_of_uid

TEST = (
    "import os, pathlib\n"
    "def test_state():\n"
    "    assert pathlib.Path('made.txt').read_text() == 'by the agent\\n'\n"
    "    assert os.stat('made.txt').st_uid == 0 and oct(os.stat('secret').st_mode)[-3:] == '600'\n"
    "    assert pathlib.Path('/etc/agent.conf').exists()\n"
)


def test_a_final_snapshot_holds_the_state_and_ends_the_sandbox(backend: SandboxBackend, tmp_path: Path) -> None:
    sandbox = backend.create(Environment(workdir="/app"))
    try:
        sandbox.exec("echo 'by the agent' > made.txt; echo s > secret; chmod 600 secret; touch /etc/agent.conf", 30)
        snapshot = sandbox.final_snapshot()
    finally:
        sandbox.destroy()
    try:
        with pytest.raises(SandboxError):
            sandbox.exec("true", 5)
        # Each test on its own copy, twice, and the state unchanged by the first.
        for _ in range(2):
            result = snapshot.verify(TEST, 60)
            assert result.exit_code == 0, result.stdout + result.stderr
        info = snapshot.export(tmp_path / "state.tar.gz", max_bytes=64 * 1024 * 1024)
        assert info.size > 0
        with gzip.open(tmp_path / "state.tar.gz") as stream, tarfile.open(fileobj=stream, mode="r|") as archive:
            names = {member.name for member in archive}
        assert {"app/made.txt", "app/secret", "etc/agent.conf"} <= names
        copy = snapshot.restore()
        try:
            assert copy.exec("cat made.txt", 30).stdout == "by the agent\n"
        finally:
            copy.destroy()
    finally:
        snapshot.discard()
    if isinstance(snapshot, LocalSnapshot):
        assert not snapshot.directory.exists()
        assert str(snapshot.directory) not in Path("/proc/self/mountinfo").read_text()
        assert pids_of_uid(snapshot.uid) == []


def test_a_large_test_module_runs_like_a_small_one(backend: SandboxBackend) -> None:
    # Over what goes in as one argument on docker (a separate write first there).
    padding = "# " + "x" * 150_000 + "\n"
    sandbox = backend.create(Environment(workdir="/app"))
    try:
        sandbox.exec("echo 'by the agent' > made.txt; echo s > secret; chmod 600 secret; touch /etc/agent.conf", 30)
        sandbox.exec("echo /nowhere/lib.so > /etc/ld.so.preload", 30)
        snapshot = sandbox.final_snapshot()
    finally:
        sandbox.destroy()
    try:
        for source, expected in ((padding + TEST, 0), (padding + "def test_no():\n    assert False\n", 1)):
            result = snapshot.verify(source, 60)
            assert result.exit_code == expected, result.stdout + result.stderr
    finally:
        snapshot.discard()
