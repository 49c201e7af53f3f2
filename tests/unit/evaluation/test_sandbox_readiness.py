"""What "ready" means for the sandbox system (evaluation/sandbox/images.py `system_missing`): the
tree and the verifier runtime for every sandbox, and only the harness runtimes its agent runs."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from evaluation.agents.factory import agent_runtimes, pin_runtimes
from evaluation.sandbox import images
from evaluation.sandbox.base import SandboxError
from tests.sandbox_fakes import harness_built, sandbox_built

HARNESS = "mini-swe-agent"
HARNESS_CONFIG = {
    "harness": HARNESS,
    "model": "m",
    "gateway": {"api": "openai", "base_url": "http://127.0.0.1:9", "api_key_env": "VERIHARM_AGENT_KEY_READINESS"},
}


@pytest.fixture
def root(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("VERIHARM_SANDBOX_ROOT", str(tmp_path / "sandbox-root"))
    for name in ("VERIHARM_VERIFIER_ROOT", "VERIHARM_HARNESS_ROOT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "sandbox-root"


def test_nothing_built_names_the_tree_and_the_verifier(root):
    missing = images.system_missing()
    assert missing == [
        f"sandbox root tree {root} is missing or incomplete",
        f"verifier runtime {root}-verifier is missing, incomplete or outdated",
    ]
    with pytest.raises(SandboxError, match=r"sandbox root tree .* is missing or incomplete; .*; build it with"):
        images.require_root_tree()


def test_the_base_alone_is_ready_for_agents_without_a_harness_not_for_a_harness(root):
    sandbox_built()
    assert images.system_ready() and images.require_root_tree() == root
    assert not images.system_ready([HARNESS])
    assert images.system_missing([HARNESS]) == [f"harness runtime {root}-harness/{HARNESS} is missing or incomplete"]
    # The whole build is not done yet: what a test suite building the system once waits for.
    assert not images.root_is_complete()
    harness_built(HARNESS)
    assert images.system_ready([HARNESS])
    # One harness built is all its agent waits for; the build is done once every harness is there.
    others = [name for name in images.HARNESS_RUNTIMES if name != HARNESS]
    assert others and not images.root_is_complete()
    assert images.system_missing(others) == [
        f"harness runtime {root}-harness/{name} is missing or incomplete" for name in sorted(others)
    ]
    for name in others:
        harness_built(name)
    assert images.root_is_complete()


def test_a_harness_built_before_the_tree_does_not_make_the_system_ready(root):
    harness_built(HARNESS)
    assert not images.system_ready([HARNESS]) and len(images.system_missing([HARNESS])) == 2


def test_a_build_holding_its_lock_is_running(root):
    root.parent.mkdir(parents=True, exist_ok=True)
    assert not images.build_running()
    with open(root.parent / images.BUILD_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert images.build_running()
    assert not images.build_running()


def test_an_agent_needs_its_harness_runtime_only():
    assert agent_runtimes("harness", HARNESS_CONFIG) == (HARNESS,)
    assert agent_runtimes("command", {"command": "sh {task_file}"}) == ()
    assert agent_runtimes("reference", {"script": "safe"}) == ()
    # A configuration that is wrong is refused for what is wrong with it, not waited for.
    assert agent_runtimes("harness", {"harness": "no-such-harness"}) == ()
    assert pin_runtimes({"kind": "harness", "config": HARNESS_CONFIG}) == (HARNESS,)
    assert pin_runtimes({}) == () and pin_runtimes(None) == ()
