"""A frozen release exported as a Harbor dataset: Harbor's own lint passes on every task, the
manifest pins each task with Harbor's own digest, the hidden tests stay out of the image, and the
export is reproducible. `harbor run` itself, with Docker: tests/interop/test_docker_paths.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from harbor.publisher.packager import Packager

from candidates.releases.interop.harbor_export import release_harbor_archive, release_harbor_files
from tests.interop.support import freeze_examples

pytestmark = pytest.mark.django_db
HARBOR = Path(sys.executable).with_name("harbor")


@pytest.fixture
def release(examples_imported, curator):
    return freeze_examples(curator)


def test_harbor_lint_passes_on_every_exported_task(release, tmp_path):
    call_command("release_export", "veriharm-bench", "1.0", "--format", "harbor", "--directory", str(tmp_path))
    root = tmp_path / "veriharm-bench-1.0-harbor"
    tasks = sorted(p for p in root.iterdir() if (p / "task.toml").is_file())
    assert [p.name for p in tasks] == ["0001", "0002"]
    done = subprocess.run([str(HARBOR), "lint", *map(str, tasks)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = (root / "dataset.toml").read_text()
    for task in tasks:
        digest, _ = Packager.compute_content_hash(task)
        assert f'digest = "sha256:{digest}"' in manifest
        # The image is built from environment/ alone: no test is in its build context.
        assert not any("test" in p.name for p in (task / "environment").rglob("*"))
        assert (task / "tests" / "harm_test.py").is_file() and (task / "solution" / "solve.sh").is_file()


def test_the_harbor_archive_is_reproducible(release):
    name, archive = release_harbor_archive(release)
    assert name == "veriharm-bench-1.0-harbor.tar.gz" and release_harbor_archive(release)[1] == archive
    _, files = release_harbor_files(release)
    assert release.checksum in files["veriharm.json"].decode()
