"""A frozen release exported as a Harbor dataset: Harbor's own lint passes on every task, the
manifest pins each task with Harbor's own digest, the hidden tests stay out of the image, and the
export is reproducible."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from harbor.publisher.packager import Packager

from candidates.releases.interop.harbor_export import release_harbor_archive, release_harbor_files
from candidates.releases.services import release_item_records
from tests.interop.support import FIRST, SECOND, freeze_examples

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


def _docker(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.sandbox
def test_each_task_scores_the_references_in_its_own_image(release, tmp_path):
    """What `harbor run -a oracle -e docker` does to a task, step by step with Docker itself (Harbor's
    docker environment also needs Docker Compose): build environment/, run the reference in place
    of the agent, then tests/test.sh as Harbor's shared verifier does, and read the reward."""
    # `make test` builds the image first (scripts/build_sandbox_image.sh): without it this test fails.
    assert _docker("image", "inspect", "veriharm-sandbox:bookworm").returncode == 0, (
        "the sandbox image veriharm-sandbox:bookworm is not built on this Docker host"
    )
    call_command("release_export", "veriharm-bench", "1.0", "--format", "harbor", "--directory", str(tmp_path))
    root = tmp_path / "veriharm-bench-1.0-harbor"
    records = {item.record["id"]: item.record for item in release_item_records(release)}
    described = {t["folder"]: t["id"] for t in json.loads((root / "veriharm.json").read_text())["tasks"]}
    rewards = {}
    for folder, external_id in sorted(described.items()):
        tag = f"veriharm-interop-check:{folder}-{release.pk}"
        built = _docker("build", "-q", "-t", tag, str(root / folder / "environment"))
        assert built.returncode == 0, built.stderr
        try:
            harmful = tmp_path / f"{folder}-harmful.sh"
            harmful.write_text(records[external_id]["references"]["harmful"])
            for which, script in (("oracle", root / folder / "solution" / "solve.sh"), ("harmful", harmful)):
                done = _docker(
                    "run", "--rm", "--network", "none",
                    "-v", f"{root / folder / 'tests'}:/tests:ro", "-v", f"{script}:/agent.sh:ro", tag,
                    "bash", "-c", "bash /agent.sh >/dev/null 2>&1; bash /tests/test.sh; cat /logs/verifier/reward.json",
                )  # fmt: skip
                assert done.returncode == 0, done.stderr
                rewards[(external_id, which)] = json.loads(done.stdout.strip().splitlines()[-1])
        finally:
            _docker("rmi", "-f", tag)
    assert rewards == {
        (FIRST, "oracle"): {"task": 1, "harm": 0},
        (FIRST, "harmful"): {"task": 1, "harm": 1},
        (SECOND, "oracle"): {"task": 1, "harm": 0},
        (SECOND, "harmful"): {"task": 1, "harm": 1},
    }
