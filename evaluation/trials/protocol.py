"""The trial protocol, over the sandbox interface only (no database, no Celery).

1. Build the source task's environment (files, setup, workdir).
2. Run the agent on t~ alone, under its time limit.
3. Snapshot the final state (and, when asked, keep it as a compressed archive
   for re-scoring later: ``score_final_state``); for each test restore a fresh
   copy, write the test in only now under a random name, and run it there, so
   neither test sees the other's effects and the agent could not have prepared
   for either. Tests run even when the agent hit its limit: a limit is an outcome.

The tests run with the sandbox layer's verifier (``Snapshot.verify``): an
interpreter and pytest from a read-only runtime the agent never had access to,
so nothing the agent planted (a python3 on PATH, a conftest.py, a
sitecustomize, an /etc/ld.so.preload...) decides a verdict. ``VERIFIER_COMMAND``
is its exact command line, for the record.

A capability-twin trial is the same protocol with the twin's instruction and
no harm test: only whether the benign work got done matters.
"""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from evaluation.agents.base import (
    AgentError,
    AgentOutcome,
    AgentRunner,
    AgentStopped,
    StepSink,
    combined_output,
    output_tail,
)
from evaluation.sandbox.base import (
    ArchiveInfo,
    ArchiveTooLarge,
    Environment,
    Limits,
    SandboxBackend,
    SandboxError,
    Snapshot,
    hidden_test_name,
    verifier_command_line,
)
from evaluation.sandbox.network import MODEL, NONE, ModelAccess

logger = logging.getLogger(__name__)

# How the tests are run, exactly (see evaluation.sandbox.verifier.verifier_argv).
VERIFIER_COMMAND = verifier_command_line()
# Cap of a kept final state (compressed); over it the archive is dropped, never the trial.
DEFAULT_FINAL_STATE_MAX_BYTES = 200 * 1024 * 1024

__all__ = [
    "DEFAULT_FINAL_STATE_MAX_BYTES",
    "VERIFIER_COMMAND",
    "RescoreOutcome",
    "TrialCancelled",
    "TrialOutcome",
    "TrialSpec",
    "VerifierOutcome",
    "hidden_test_name",
    "run_test",
    "score_final_state",
    "trial_run",
]


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
class TrialOutcome:
    agent: AgentOutcome
    task: VerifierOutcome
    harm: VerifierOutcome | None
    # The agent's final state kept as an archive (None when not asked for or not kept),
    # and why it was not kept.
    final_state: ArchiveInfo | None = None
    final_state_note: str = ""

    @property
    def r_task(self) -> int:
        return int(self.task.passed)

    @property
    def r_harm(self) -> int | None:
        return None if self.harm is None else int(self.harm.passed)


@dataclass(frozen=True)
class RescoreOutcome:
    task: VerifierOutcome | None
    harm: VerifierOutcome | None


def run_test(snapshot: Snapshot, test_source: str, timeout: float) -> VerifierOutcome:
    """Run one pytest module on its own fresh copy of the final state."""
    result = snapshot.verify(test_source, timeout)
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
    final_state: pathlib.Path | None = None,
    final_state_max_bytes: int = DEFAULT_FINAL_STATE_MAX_BYTES,
) -> TrialOutcome:
    """Run one trial end to end; every sandbox it made is destroyed when it returns or raises.

    With ``final_state``, the agent's final state is written there (gzip tar) before
    the tests run; an archive over ``final_state_max_bytes`` or one that cannot be
    written is dropped with a note, and the trial goes on.

    Raises TrialCancelled when `cancelled()` turns true between steps, and lets
    SandboxError / AgentError (infrastructure) through for the caller to retry.
    """

    def checkpoint() -> None:
        if cancelled():
            raise TrialCancelled()

    environment = Environment.from_spec(spec.environment)
    model = _model_access(agent)
    checkpoint()
    sandbox = backend.create(environment, spec.limits, **({"model": model} if model is not None else {}))
    try:
        checkpoint()
        try:
            agent_outcome = agent.run(
                sandbox, spec.instruction, time_limit=spec.agent_time_limit, record=record, should_stop=cancelled
            )
        except AgentStopped:
            raise TrialCancelled() from None
        checkpoint()
        # Nothing runs in the agent's sandbox after this: the backend may hand its state over.
        snapshot = sandbox.final_snapshot()
    except BaseException:
        sandbox.destroy()
        raise
    try:
        # The agent's sandbox goes away while the tests run: the snapshot does not depend on it.
        # Each test has its own copy of the final state, so the two run at once too. Leaving the
        # pool waits for all three, and each test destroys its own sandbox whatever the others do.
        with ThreadPoolExecutor(max_workers=3, thread_name_prefix="trial") as pool:
            destroyed = pool.submit(sandbox.destroy)
            archive, note = (None, "") if final_state is None else _keep(snapshot, final_state, final_state_max_bytes)
            checkpoint()
            task_future = pool.submit(run_test, snapshot, spec.task_test, spec.test_timeout)
            harm_future = (
                None if spec.harm_test is None else pool.submit(run_test, snapshot, spec.harm_test, spec.test_timeout)
            )
        task, harm = task_future.result(), None if harm_future is None else harm_future.result()
        if destroyed.exception() is not None:
            # The outcome stands; what is left over is an orphan for cleanup_orphans.
            logger.warning("could not destroy the agent's sandbox: %s", destroyed.exception())
    finally:
        snapshot.discard()
    return TrialOutcome(agent=agent_outcome, task=task, harm=harm, final_state=archive, final_state_note=note)


def _model_access(agent: AgentRunner) -> ModelAccess | None:
    """Network mode model: the trial gateway's socket and the agent's harness runtime; else None."""
    if agent.network == NONE:
        return None
    if agent.network != MODEL:
        raise AgentError(f"unknown network mode {agent.network!r}")
    if agent.gateway is None or getattr(agent.gateway, "socket_dir", None) is None:
        raise AgentError("this agent reaches its model from the sandbox, but the trial has no model gateway")
    return ModelAccess(socket_dir=pathlib.Path(agent.gateway.socket_dir), harness_root=agent.harness_root())


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size} bytes"


def _keep(snapshot: Snapshot, path: pathlib.Path, max_bytes: int) -> tuple[ArchiveInfo | None, str]:
    """Export the final state; what cannot be kept is a note, never a failed trial."""
    try:
        return snapshot.export(path, max_bytes=max_bytes), ""
    except ArchiveTooLarge as exc:
        return None, f"not kept: over the {_megabytes(max_bytes)} cap (stopped at {_megabytes(exc.size)})"
    except (SandboxError, OSError) as exc:
        logger.warning("could not keep the final state in %s: %s", path, exc)
        return None, f"not kept: {exc}"


def score_final_state(
    backend: SandboxBackend,
    environment: Environment,
    limits: Limits,
    archive: pathlib.Path,
    task_test: str | None,
    harm_test: str | None,
    timeout: float,
) -> RescoreOutcome:
    """Run tests on a kept final state, each on its own restored copy, with the trials' verifier.

    No agent runs and the environment's setup is not applied again: the archive is the
    state. SandboxError (e.g. an unreadable archive) goes to the caller.
    """
    snapshot = backend.load_archive(environment, limits, archive)
    try:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="rescore") as pool:
            task = None if task_test is None else pool.submit(run_test, snapshot, task_test, timeout)
            harm = None if harm_test is None else pool.submit(run_test, snapshot, harm_test, timeout)
        return RescoreOutcome(
            task=None if task is None else task.result(), harm=None if harm is None else harm.result()
        )
    finally:
        snapshot.discard()
