"""Fixtures for the sandbox suites: both backends, on a base system built once per session.

Nothing here uses Django or the database. A missing root tree, image or Docker
engine is built/started by the project's scripts; if that fails, the tests fail
(never skip): a sandbox layer that is not exercised is not known to contain.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evaluation.sandbox import Sandbox, SandboxBackend
from evaluation.sandbox.bubblewrap import LocalSandbox
from evaluation.sandbox.bubblewrap.host import pids_of_uid
from evaluation.sandbox.docker import DockerSandbox
from evaluation.sandbox.images import (
    build_sandbox_base,
    default_image,
    root_is_complete,
    start_docker_engine,
    verifier_is_complete,
)
from evaluation.sandbox.registry import get_backend

REPO = Path(__file__).resolve().parents[3]
BACKENDS = ("local", "docker")


def _docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


def _image_present() -> bool:
    return (
        subprocess.run(["docker", "image", "inspect", default_image()], capture_output=True, check=False).returncode
        == 0
    )


@pytest.fixture(scope="session")
def sandbox_base() -> None:
    """Docker engine up, root tree, verifier runtime and image built: by the scripts, only when missing."""
    if not _docker_answers():
        start_docker_engine()
    if not root_is_complete() or not verifier_is_complete() or not _image_present():
        build_sandbox_base()
    assert root_is_complete(), "scripts/build_sandbox_image.sh ran but the root tree is still incomplete"
    assert verifier_is_complete(), "scripts/build_sandbox_image.sh ran but the verifier runtime is still incomplete"
    assert _image_present(), f"scripts/build_sandbox_image.sh ran but image {default_image()} is missing"


@pytest.fixture(scope="session")
def backends(sandbox_base: None) -> Iterator[dict[str, SandboxBackend]]:
    # VERIHARM_TEST_SANDBOX_POOL_SIZE=1 runs the whole suite on warm-pooled backends (the way the
    # workers run trials): every behaviour must hold whichever way a sandbox was built.
    pool_size = int(os.environ.get("VERIHARM_TEST_SANDBOX_POOL_SIZE", "0"))
    made = {name: get_backend(name, pool_size=pool_size) for name in BACKENDS}
    yield made
    for backend in made.values():
        backend.drain_pools()  # type: ignore[attr-defined]
        backend.cleanup_orphans()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, backends: dict[str, SandboxBackend]) -> SandboxBackend:
    return backends[request.param]


@pytest.fixture
def sandboxes() -> Iterator[list[Sandbox]]:
    """Register sandboxes here to have them destroyed even when the test fails."""
    made: list[Sandbox] = []
    yield made
    for sandbox in made:
        sandbox.destroy()


@pytest.fixture
def processes_in() -> Callable[[Sandbox], list[str]]:
    return sandbox_processes


@pytest.fixture
def python_process() -> Callable[[str], subprocess.Popen[str]]:
    return python_subprocess


def sandbox_processes(sandbox: Sandbox) -> list[str]:
    """What the host sees running inside the sandbox, besides the docker backend's PID 1 keep-alive.

    Host-side view on purpose: a process hiding from ``ps`` inside is still listed here.
    """
    if isinstance(sandbox, LocalSandbox):
        found = []
        for pid in pids_of_uid(sandbox.uid):
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
        return found
    if isinstance(sandbox, DockerSandbox):
        top = sandbox.container.top(ps_args="-eo pid,ppid,args")
        rows = [dict(zip(top["Titles"], p, strict=False)) for p in top["Processes"]]
        init = [r["PID"] for r in rows if "while :; do sleep 86400" in r["COMMAND"]]
        return [
            r["COMMAND"]
            for r in rows
            if r["PID"] not in init and not (r["PPID"] in init and r["COMMAND"] == "sleep 86400")
        ]
    raise TypeError(f"unknown sandbox type {type(sandbox).__name__}")


def python_subprocess(code: str) -> subprocess.Popen[str]:
    """A separate Python process running ``code`` with the repository importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(REPO),
    )
