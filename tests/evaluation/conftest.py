"""Fixtures for the evaluation tests: real sandboxes, a real Celery worker on Redis, waiting helpers, the
containment probe's web server."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from evaluation.sandbox.images import (
    build_sandbox_base,
    default_image,
    root_is_complete,
    start_docker_engine,
    verifier_is_complete,
)
from tests.evaluation import containment_probe


def _docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


def _image_present() -> bool:
    probe = subprocess.run(["docker", "image", "inspect", default_image()], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture(scope="session")
def sandboxes_ready() -> None:
    """A Docker engine answers and the sandbox root, verifier runtime and image exist (built by the
    project's scripts)."""
    if not _docker_answers():
        start_docker_engine()
    if not root_is_complete() or not verifier_is_complete() or not _image_present():
        build_sandbox_base()
    assert root_is_complete() and verifier_is_complete() and _image_present(), (
        "the sandbox root tree, verifier runtime or image is missing after the build"
    )


@pytest.fixture
def web_server() -> Iterator[int]:
    """The port of a web server on the host, on every address: a target of the containment probe."""
    with containment_probe.web_server() as port:
        yield port


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def wait_for_run(run, timeout: float = 180) -> dict:
    from evaluation.runs import selectors as run_selectors

    wait_until(
        lambda: run_selectors.run_progress(run)["status"] in ("finished", "cancelled"), timeout, f"{run} to finish"
    )
    return run_selectors.run_progress(run)


def mini_swe_agent_create(name: str, base_url: str, key_env: str):
    """A mini-swe-agent harness agent whose model `scripted-1` answers at `base_url` (a loopback
    chat server), priced, its key read from `key_env`."""
    from evaluation.runs.agents import agent_create

    return agent_create(
        name=name,
        kind="harness",
        model="scripted-1",
        harness="mini-swe-agent",
        config={
            "harness": "mini-swe-agent",
            "model": "scripted-1",
            "step_limit": 6,
            "gateway": {
                "api": "openai",
                "base_url": base_url,
                "api_key_env": key_env,
                "prices": {"scripted-1": {"input": 1, "output": 2}},
            },
        },
        time_limit=300,
    )


@pytest.fixture(scope="session")
def harnesses_ready(sandboxes_ready) -> None:
    """Every harness runtime the build script makes (the native CLIs beside mini-swe-agent)."""
    from evaluation.sandbox.images import HARNESS_RUNTIMES, build_sandbox_base, harness_is_complete

    if not all(harness_is_complete(name) for name in HARNESS_RUNTIMES):
        build_sandbox_base()
    missing = [name for name in HARNESS_RUNTIMES if not harness_is_complete(name)]
    assert not missing, f"the build script did not make the runtimes of {missing}"
