"""The trial protocol over the sandbox interface, with an in-memory fake sandbox (no processes)."""

from __future__ import annotations

import re
import shlex
from types import SimpleNamespace

import pytest

from evaluation.agents.base import AgentError, AgentOutcome, AgentRunner, AgentStopped
from evaluation.sandbox.base import TESTS_MOUNT, ExecResult, SandboxError, verifier_argv
from evaluation.sandbox.network import ModelAccess
from evaluation.trials.protocol import TrialCancelled, TrialSpec, trial_run
from tests.evaluation.fake_sandbox import FakeBackend, FakeSandbox, ok

MODULE = re.compile(r"(test_[0-9a-f]{32})\.py$")


def pytest_handler(sandbox: FakeSandbox, command: str) -> ExecResult:
    """Understands the protocol's pytest command and a tiny test language: `delete P`, `require P`."""
    match = MODULE.search(command)
    assert match, f"unexpected command {command!r}"
    # The verifier runtime's own loader and python, never the sandbox's python3.
    assert shlex.split(command) == verifier_argv(f"{TESTS_MOUNT}/{match.group(1)}.py")
    source = sandbox.read_file(f"{TESTS_MOUNT}/{match.group(1)}.py").decode()
    for line in source.splitlines():
        verb, _, path = line.partition(" ")
        full = f"{sandbox.workdir}/{path}"
        if verb == "delete":
            sandbox.files.pop(full, None)
        elif verb == "require" and full not in sandbox.files:
            return ok("1 failed", exit_code=1)
    return ok("1 passed")


class WritingAgent(AgentRunner):
    """Writes files, and remembers what it could see of the working directory."""

    def __init__(self, files: dict[str, str], timed_out: bool = False, network: str = "none") -> None:
        self.files = files
        self.timed_out = timed_out
        self.network = network
        self.seen: list[str] = []
        self.task = ""

    def run(self, sandbox, task, *, time_limit, record, should_stop):
        self.task = task
        self.seen = sorted(sandbox.files)
        for path, content in self.files.items():
            sandbox.write_file(path, content)
        return AgentOutcome(exit_code=None if self.timed_out else 0, timed_out=self.timed_out, duration=1.0, output="")


def spec(**overrides) -> TrialSpec:
    values = dict(
        environment={"workdir": "/work", "files": {"data.txt": "x"}},
        instruction="the perturbed task",
        task_test="require done.txt\ndelete evidence.txt",
        harm_test="require evidence.txt",
        agent_time_limit=5,
        test_timeout=5,
    )
    values.update(overrides)
    return TrialSpec(**values)


def test_each_test_runs_on_its_own_copy_of_the_final_state():
    backend = FakeBackend(pytest_handler)
    agent = WritingAgent({"done.txt": "1", "evidence.txt": "harm"})
    outcome = trial_run(backend, spec(), agent, record=lambda step: None)
    # The task test deleted the evidence, yet the harm test (run second) still found it.
    assert (outcome.r_task, outcome.r_harm) == (1, 1)
    assert agent.task == "the perturbed task"
    assert not backend.live and not backend.snapshots


def test_tests_are_written_only_after_the_agent_under_fresh_random_names():
    backend = FakeBackend(pytest_handler)
    agent = WritingAgent({"done.txt": "1"})
    outcome = trial_run(backend, spec(), agent, record=lambda step: None)
    assert (outcome.r_task, outcome.r_harm) == (1, 0)
    assert agent.seen == ["/work/data.txt"]  # the agent saw the environment and no test
    modules = [MODULE.search(c).group(1) for c in backend.log]
    assert len(modules) == 2 and modules[0] != modules[1]
    assert backend.environments[0].workdir == "/work" and backend.environments[0].network is False


def test_tests_run_when_the_agent_hit_its_time_limit():
    backend = FakeBackend(pytest_handler)
    outcome = trial_run(backend, spec(), WritingAgent({"done.txt": "1"}, timed_out=True), record=lambda s: None)
    assert outcome.agent.timed_out and outcome.agent.exit_code is None
    assert outcome.r_task == 1 and len(backend.log) == 2


def test_a_failing_test_and_a_test_timeout_give_zero():
    def handler(sandbox, command):
        if "require" in sandbox.read_file(f"{TESTS_MOUNT}/{MODULE.search(command).group(1)}.py").decode():
            return ExecResult(exit_code=None, stdout="", stderr="", timed_out=True, duration=5.0)
        return ok("boom", exit_code=2)

    outcome = trial_run(
        FakeBackend(handler), spec(task_test="nothing", harm_test="require x"), WritingAgent({}), record=lambda s: None
    )
    assert (outcome.r_task, outcome.r_harm) == (0, 0)
    assert outcome.task.exit_code == 2 and outcome.harm.timed_out


def test_cancel_between_steps_destroys_every_sandbox():
    backend = FakeBackend(pytest_handler)
    calls = {"n": 0}

    def cancelled() -> bool:
        calls["n"] += 1
        return calls["n"] >= 3  # after the agent ran, before the snapshot

    with pytest.raises(TrialCancelled):
        trial_run(backend, spec(), WritingAgent({"done.txt": "1"}), record=lambda s: None, cancelled=cancelled)
    assert not backend.live and not backend.snapshots and not backend.log


def test_an_agent_that_stops_for_a_cancel_ends_the_trial_as_cancelled():
    class Stopping(WritingAgent):
        def run(self, sandbox, task, **kwargs):
            raise AgentStopped()

    backend = FakeBackend(pytest_handler)
    with pytest.raises(TrialCancelled):
        trial_run(backend, spec(), Stopping({}), record=lambda s: None)
    assert not backend.live


def test_infrastructure_failure_propagates_and_leaves_nothing_behind():
    def handler(sandbox, command):
        raise SandboxError("daemon gone")

    backend = FakeBackend(handler)
    with pytest.raises(SandboxError):
        trial_run(backend, spec(), WritingAgent({"done.txt": "1"}), record=lambda s: None)
    assert not backend.live and not backend.snapshots


def test_model_mode_needs_the_trials_gateway_and_gets_only_its_socket(tmp_path):
    backend = FakeBackend(pytest_handler)
    # Without a gateway a model-mode agent cannot start (an agent error), and no sandbox is made.
    with pytest.raises(AgentError, match="no model gateway"):
        trial_run(backend, spec(), WritingAgent({}, network="model"), record=lambda s: None)
    assert backend.environments == []
    agent = WritingAgent({}, network="model")
    agent.attach_gateway(SimpleNamespace(socket_dir=tmp_path))
    trial_run(backend, spec(), agent, record=lambda s: None)
    assert backend.models == [ModelAccess(socket_dir=tmp_path)]
    # Mode none: no model access at all, even with a gateway attached.
    quiet = WritingAgent({})
    quiet.attach_gateway(SimpleNamespace(socket_dir=tmp_path))
    trial_run(backend, spec(), quiet, record=lambda s: None)
    assert backend.models == [ModelAccess(socket_dir=tmp_path), None]
    assert all(environment.network is False for environment in backend.environments)
