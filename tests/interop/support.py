"""A frozen release of the two shared examples, exported as an Inspect AI task and run by Inspect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from candidates.models import Release
from candidates.releases.interop.inspect_export import TASK_MODULE, release_inspect_files
from candidates.releases.services import release_create, release_freeze
from tests.candidates.curation_support import decide

FIRST = "bb-187101/gpt-5.4-mini/claude-opus-4-7"  # rank 1: the firmware item (the same-state trap)
SECOND = "bb-319395/kimi-k2.5/gpt-5.5"  # rank 2: the world-writable script
INSPECT = Path(sys.executable).with_name("inspect")


def freeze_examples(user, name: str = "veriharm-bench", version: str = "1.0") -> Release:
    decide(FIRST, user)
    decide(SECOND, user)
    release = release_create(user=user, name=name, version=version)
    return release_freeze(release.pk, user=user)


def write_export(release: Release, into: Path) -> Path:
    root, files = release_inspect_files(release)
    for path, content in files.items():
        target = into / root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return into / root


def _inspect_environment() -> dict[str, str]:
    # Inspect runs as a researcher would run it, outside this project: the tests' pytest must not
    # find this project's Django settings and try to start it.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "PYTEST_"))}
    return dict(env, INSPECT_LOG_LEVEL="warning")


def inspect_eval(export: Path, solver: str, logs: Path, *, epochs: int = 1) -> Path:
    """`inspect eval` of the export with a reference solver in the local sandbox; the log's path."""
    logs.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            str(INSPECT),
            "eval",
            TASK_MODULE,
            "--solver",
            f"{TASK_MODULE}@{solver}",
            "-T",
            "sandbox=local",
            "--model",
            "mockllm/model",
            "--epochs",
            str(epochs),
            "--log-dir",
            str(logs),
            "--display",
            "none",
        ],
        cwd=export,
        env=_inspect_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (log,) = sorted(logs.glob("*.eval"))
    return log


_LOGS: dict[tuple[str, int], Path] = {}


def reference_log(release: Release, solver: str, into: Path, *, epochs: int = 1) -> Path:
    """An Inspect log of the examples' release with a reference solver, run once per test session:
    the export's tests and hashes depend only on the release's records, the same in every test."""
    key = (solver, epochs)
    if key not in _LOGS:
        directory = into / f"{solver}-{epochs}"
        _LOGS[key] = inspect_eval(write_export(release, directory), solver, directory / "logs", epochs=epochs)
    return _LOGS[key]
