"""What every agent harness shares: how it reports steps and how its run ends.

An agent sees only the sandbox and the perturbed task t~; the trial protocol
(`evaluation.trials.protocol`) owns everything before and after.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# The transcript's vocabulary, which the readers of harness outputs (`evaluation.agents.trajectories`)
# share: defined beside them, below every agent, and handed on here.
from evaluation.agents.trajectories.steps import TAIL_CHARS as TAIL_CHARS
from evaluation.agents.trajectories.steps import Step as Step
from evaluation.agents.trajectories.steps import output_tail as output_tail

if TYPE_CHECKING:
    from evaluation.sandbox.base import ExecResult, Sandbox


def combined_output(stdout: str | bytes | None, stderr: str | bytes | None) -> str:
    """stdout, then stderr under a marker, as one text."""
    out = stdout.decode("utf-8", "replace") if isinstance(stdout, bytes) else (stdout or "")
    err = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else (stderr or "")
    return out + (("\n[stderr]\n" + err) if err else "")


StepSink = Callable[[Step], None]
StopCheck = Callable[[], bool]


@dataclass(frozen=True)
class AgentOutcome:
    exit_code: int | None
    timed_out: bool
    duration: float
    output: str
    # The harness ran out of model calls: the run ended, but not by the agent's own decision.
    hit_step_limit: bool = False


def command_step(command: str, result: ExecResult, output: str) -> Step:
    return Step(
        kind="command",
        command=command,
        content=output,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        duration=result.duration,
    )


def run_single_command(
    sandbox: Sandbox,
    command: str,
    *,
    shown: str,
    time_limit: float,
    record: StepSink,
    env: dict[str, str] | None = None,
) -> AgentOutcome:
    """The whole agent is one command: run it, record it as the only step, and end with its status."""
    result = sandbox.exec(command, timeout=time_limit, env=env)
    output = output_tail(combined_output(result.stdout, result.stderr))
    record(command_step(shown, result, output))
    return AgentOutcome(exit_code=result.exit_code, timed_out=result.timed_out, duration=result.duration, output=output)


class AgentError(Exception):
    """The harness itself failed (endpoint unreachable, malformed reply, missing key).

    Like a SandboxError this is infrastructure, not an agent outcome: the trial is retried.
    """

    retryable = True


class AgentFailed(AgentError):
    """The agent's own program ended in error (its harness said so, or exited failing without an
    answer): the agent's outcome, not the infrastructure's, so the trial ends as an agent error at
    once, with no verdict, instead of being tried again."""

    retryable = False


class AgentStopped(Exception):
    """The agent noticed its run was cancelled and stopped between steps."""


class AgentRunner(ABC):
    #: The sandbox's network mode (`evaluation.sandbox.network`): "none", or "model" for a harness
    #: inside the sandbox that reaches its model through the trial's gateway. Never the host's.
    network: str = "none"
    #: The trial's model gateway, for agents that call a model (its socket for a harness in the sandbox).
    gateway: Any = None

    def attach_gateway(self, gateway: Any) -> None:
        """Called by the worker before `run` when the agent's configuration names a model upstream."""
        self.gateway = gateway

    def harness_root(self) -> Any:
        """The host directory of the read-only harness runtimes, for agents that run one."""
        return None

    def identity(self) -> str:
        """What the agent runs on beyond the sandbox system (a harness runtime's identity), or ""."""
        return ""

    @abstractmethod
    def run(
        self, sandbox: Sandbox, task: str, *, time_limit: float, record: StepSink, should_stop: StopCheck
    ) -> AgentOutcome:
        """Run in `sandbox` on `task` for at most `time_limit` seconds."""
