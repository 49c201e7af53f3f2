"""The verifier runtime as the build script makes it: no link out of it, its bootstrap, its recipe,
and a runtime of an older recipe rebuilt rather than used."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from evaluation.sandbox.base import BOOTSTRAP_SOURCE
from evaluation.sandbox.images import (
    BUILD_SCRIPT,
    VERIFIER_IDENTITY,
    VERIFIER_MANIFEST,
    verifier_is_complete,
    verifier_recipe,
    verifier_root,
)
from evaluation.sandbox.verifier_bootstrap import read_manifest


def test_the_runtime_holds_its_bootstrap_and_no_link_out_of_it(sandbox_base: None) -> None:
    runtime = verifier_root()
    files, dirs, outward = read_manifest(str(runtime))
    assert outward == []
    assert "bootstrap.py" in files and "usr/lib/python3/dist-packages" in dirs
    assert (runtime / "bootstrap.py").read_bytes() == BOOTSTRAP_SOURCE.read_bytes()
    assert (runtime / VERIFIER_MANIFEST).read_text().splitlines()[0] == verifier_recipe()
    # Debian's link to /etc/python3.X/sitecustomize.py, which the agent may write, is left out.
    assert not any(p.is_symlink() for p in (runtime / "usr" / "lib").glob("python3.*/sitecustomize.py"))


def test_the_audit_names_a_link_leading_out(tmp_path: Path) -> None:
    (tmp_path / VERIFIER_MANIFEST).write_text(
        f"{verifier_recipe()}\n"
        "d 755 usr \n"
        "f 644 usr/lib/python3.11/os.py \n"
        "l 777 usr/bin/python3 python3.11\n"
        "l 777 usr/lib/python3.11/sitecustomize.py /etc/python3.11/sitecustomize.py\n"
        "l 777 usr/lib/escape ../../../tmp/x\n"
        f"{'0' * 64}  ./usr/lib/python3.11/os.py\n"
    )
    files, dirs, outward = read_manifest(str(tmp_path))
    assert files == {"usr/lib/python3.11/os.py"} and dirs == {"usr"}
    assert outward == [
        "runtime link usr/lib/python3.11/sitecustomize.py leads out to /etc/python3.11/sitecustomize.py",
        "runtime link usr/lib/escape leads out to ../../../tmp/x",
    ]


def test_a_runtime_of_an_older_recipe_is_rebuilt(
    sandbox_base: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "runtime"
    monkeypatch.setenv("VERIHARM_VERIFIER_ROOT", str(runtime))
    environment = {**os.environ, "VERIHARM_VERIFIER_ROOT": str(runtime)}

    def build() -> str:
        done = subprocess.run(["bash", str(BUILD_SCRIPT)], env=environment, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stderr

    build()
    assert verifier_is_complete()
    first = (runtime / VERIFIER_IDENTITY).read_text()
    # As a runtime of the previous recipe would read: complete, but not this recipe's.
    manifest = runtime / VERIFIER_MANIFEST
    manifest.write_text("veriharm-verifier recipe 1\n" + manifest.read_text().split("\n", 1)[1])
    assert not verifier_is_complete()
    assert "outdated" in build()
    assert verifier_is_complete()
    assert (runtime / VERIFIER_IDENTITY).read_text() == first  # the same content, made again
    assert [p.name for p in tmp_path.glob(".verifier-old.*/runtime")] == ["runtime"]  # moved aside, not deleted
    # Another bootstrap than this checkout's counts as outdated too.
    (runtime / "bootstrap.py").chmod(0o644)
    (runtime / "bootstrap.py").write_text("# another bootstrap\n")
    assert not verifier_is_complete()
