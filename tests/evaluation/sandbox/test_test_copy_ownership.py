"""What the agent leaves is what each test sees: ownership, setuid bits and symlinks survive the
test-phase copy, and making that copy never follows a link out of the sandbox."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from evaluation.sandbox import Environment, SandboxBackend
from evaluation.sandbox.host_fs import chown_tree

TEST = (
    "import os, stat\n"
    "def test_state():\n"
    "    info = os.stat('run.sh')\n"
    "    assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o4755\n"
    "    assert stat.S_IMODE(os.stat('group.sh').st_mode) == 0o2750\n"
    "    assert os.readlink('to-passwd') == '/etc/passwd' and os.lstat('to-passwd').st_uid == 0\n"
    "    assert os.stat('deep/er/file').st_uid == 0\n"
)


def test_setuid_bits_and_symlinks_reach_each_test_copy(backend: SandboxBackend) -> None:
    sandbox = backend.create(Environment(workdir="/app"))
    try:
        result = sandbox.exec(
            "printf '#!/bin/sh\\n' > run.sh && chmod 4755 run.sh && cp run.sh group.sh && chmod 2750 group.sh"
            " && ln -s /etc/passwd to-passwd && mkdir -p deep/er && touch deep/er/file",
            30,
        )
        assert result.exit_code == 0, result.stderr
        snapshot = sandbox.final_snapshot()
    finally:
        sandbox.destroy()
    try:
        for _ in range(2):
            verdict = snapshot.verify(TEST, 60)
            assert verdict.exit_code == 0, verdict.stdout + verdict.stderr
    finally:
        snapshot.discard()


def test_chown_tree_never_follows_a_symlink_nor_leaves_its_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("host file")
    os.chown(outside, 0, 0)
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "file").write_text("x")
    (tree / "suid").write_text("x")
    os.chmod(tree / "suid", 0o4755)
    (tree / "link").symlink_to(outside)
    (tree / "a" / "dirlink").symlink_to(tmp_path)

    chown_tree(tree, 4242)

    for path in (tree / "a", tree / "a" / "b", tree / "a" / "b" / "file", tree / "suid"):
        assert os.lstat(path).st_uid == 4242 and os.lstat(path).st_gid == 4242, path
    assert os.lstat(tree / "link").st_uid == 4242  # the link itself...
    assert os.stat(outside).st_uid == 0  # ...never what it points to
    assert os.stat(tmp_path).st_uid == 0
    assert os.stat(tree).st_uid == 0  # the top stays its owner's
    assert stat.S_IMODE(os.stat(tree / "suid").st_mode) == 0o4755
