"""The trial protocol, over the sandbox interface only (no database, no Celery).

1. Build the source task's environment (files, setup, workdir).
2. Run the agent on t~ alone, under its time limit.
3. Snapshot the final state; for each test restore a fresh copy, write the
   test in only now under a random name, and run it there, so neither test
   sees the other's effects and the agent could not have prepared for either.
   Tests run even when the agent hit its limit: a limit is an outcome.

A capability-twin trial is the same protocol with the twin's instruction and
no harm test: only whether the benign work got done matters.
"""
from __future__ import annotations

import logging
import secrets
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .agents.base import AgentOutcome, AgentRunner, AgentStopped, StepSink, combined_output, output_tail
from .sandbox.base import ArchiveTooLarge, Environment, Limits, SandboxBackend, Snapshot

logger = logging.getLogger(__name__)

# `-c /dev/null`: configuration the agent may have left in the working directory
# (pytest.ini, tox.ini, pyproject.toml) must not change how the tests run. -P keeps
# the working directory off sys.path, so a planted pytest.py cannot stand in for
# pytest; --noconftest ignores a planted conftest.py.
PYTEST = "python3 -P -m pytest -q -p no:cacheprovider --noconftest -c /dev/null --rootdir . {module}"


class TrialCancelled(Exception):
    """The run was cancelled; the protocol stopped between steps and destroyed its sandboxes."""


@dataclass(frozen=True)
class TrialSpec:
    environment: Mapping[str, Any] | None
    instruction: str
    task_test: str
    # None for a capability twin: its run is judged by the task test alone.
    harm_test: str | None
    agent_time_limit: float
    test_timeout: float
    limits: Limits = Limits()


@dataclass(frozen=True)
class VerifierOutcome:
    passed: bool
    exit_code: int | None
    timed_out: bool
    duration: float
    output: str


@dataclass(frozen=True)
class ArchiveInfo:
    sha256: str
    size: int


@dataclass(frozen=True)
class TrialOutcome:
    agent: AgentOutcome
    task: VerifierOutcome
    harm: VerifierOutcome | None
    # The agent's final state exported for re-scoring, when asked for and within its size cap.
    final_state: ArchiveInfo | None = None
    final_state_note: str = ""

    @property
    def r_task(self) -> int:
        return int(self.task.passed)

    @property
    def r_harm(self) -> int | None:
        return None if self.harm is None else int(self.harm.passed)


def hidden_test_name() -> str:
    """A module name nobody can predict: 128 random bits."""
    return f"test_{secrets.token_hex(16)}"


def run_test(snapshot: Snapshot, test_source: str, timeout: float) -> VerifierOutcome:
    """Run one pytest module on its own fresh copy of the final state."""
    sandbox = snapshot.restore()
    try:
        name = hidden_test_name()
        sandbox.write_file(f"{name}.py", test_source.encode())
        result = sandbox.exec(PYTEST.format(module=f"{name}.py"), timeout=timeout)
    finally:
        sandbox.destroy()
    return VerifierOutcome(
        passed=result.exit_code == 0 and not result.timed_out,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=result.duration,
        output=output_tail(combined_output(result.stdout, result.stderr)),
    )


def trial_run(
    backend: SandboxBackend,
    spec: TrialSpec,
    agent: AgentRunner,
    *,
    record: StepSink,
    cancelled: Callable[[], bool] = lambda: False,
    final_state: Path | None = None,
    final_state_max_bytes: int = 64 * 1024 * 1024,
) -> TrialOutcome:
    """Run one trial end to end; every sandbox it made is destroyed when it returns or raises.

    Raises TrialCancelled when `cancelled()` turns true between steps, and lets
    SandboxError / AgentError (infrastructure) through for the caller to retry.
    """

    def checkpoint() -> None:
        if cancelled():
            raise TrialCancelled()

    environment = Environment.from_spec(spec.environment)
    if agent.needs_network and not environment.network:
        environment = replace(environment, network=True)
    checkpoint()
    sandbox = backend.create(environment, spec.limits)
    try:
        checkpoint()
        try:
            agent_outcome = agent.run(
                sandbox, spec.instruction, time_limit=spec.agent_time_limit, record=record, should_stop=cancelled
            )
        except AgentStopped:
            raise TrialCancelled() from None
        checkpoint()
        snapshot = sandbox.snapshot()
    except BaseException:
        sandbox.destroy()
        raise
    kept, note = None, ""
    if final_state is not None:
        try:
            info = snapshot.export(final_state, max_bytes=final_state_max_bytes)
            kept = ArchiveInfo(info.sha256, info.size)
        except ArchiveTooLarge as exc:
            note = f"not kept: {exc}"
        except BaseException:
            snapshot.discard()
            sandbox.destroy()
            raise
    try:
        # The agent's sandbox goes away while the tests run: the snapshot does not depend on it.
        # Each test has its own copy of the final state, so the two run at once too. Leaving the
        # pool waits for all three, and each test destroys its own sandbox whatever the others do.
        with ThreadPoolExecutor(max_workers=3, thread_name_prefix="trial") as pool:
            destroyed = pool.submit(sandbox.destroy)
            checkpoint()
            task_future = pool.submit(run_test, snapshot, spec.task_test, spec.test_timeout)
            harm_future = None if spec.harm_test is None else pool.submit(
                run_test, snapshot, spec.harm_test, spec.test_timeout
            )
        task, harm = task_future.result(), None if harm_future is None else harm_future.result()
        if destroyed.exception() is not None:
            # The outcome stands; what is left over is an orphan for cleanup_orphans.
            logger.warning("could not destroy the agent's sandbox: %s", destroyed.exception())
    finally:
        snapshot.discard()
    return TrialOutcome(agent=agent_outcome, task=task, harm=harm, final_state=kept, final_state_note=note)
