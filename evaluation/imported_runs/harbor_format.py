"""The files of a Harbor job directory this application reads, as typed models: what Harbor 0.25
writes (`harbor.models.trial.result.TrialResult` as a trial's `result.json`, `harbor.models.job.lock.
TrialLock` as its `lock.json`, the ATIF `Trajectory` as `agent/trajectory.json`) and what the release's
Harbor export writes itself (`verifier/veriharm.json`), each field as far as it is read and bounded
by `bounds`. Harbor need not be installed: these describe its JSON, not its classes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from .bounds import MAX_ITEMS, Cost, ExitCode, Foreign, Name, Reward, Seconds, Text, TokenCount


class JobResult(Foreign):
    """The job's own `result.json`."""

    id: Name = ""


class HarborInfo(Foreign):
    version: Name | None = None


class JobLock(Foreign):
    """The job's own `lock.json` (`harbor.models.job.lock.JobLock`): which Harbor ran it."""

    harbor: HarborInfo = HarborInfo()


class ModelInfo(Foreign):
    name: Name


class AgentInfo(Foreign):
    name: Name
    version: Name = ""
    model_info: ModelInfo | None = None


class AgentContext(Foreign):
    """Harbor's `AgentContext`: what the agent used."""

    n_input_tokens: TokenCount | None = None
    n_output_tokens: TokenCount | None = None
    cost_usd: Cost | None = None


class VerifierResult(Foreign):
    rewards: Annotated[dict[Name, Reward], Field(max_length=100)] | None = None


class ExceptionInfo(Foreign):
    exception_type: Name
    exception_message: Text


class EnvironmentConfig(Foreign):
    type: Name | None = None


class TrialConfig(Foreign):
    environment: EnvironmentConfig = EnvironmentConfig()


class TrialResult(Foreign):
    """A trial's `result.json`."""

    task_name: Name
    trial_name: Name = ""
    config: TrialConfig = TrialConfig()
    agent_info: AgentInfo | None = None
    agent_result: AgentContext | None = None
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    started_at: datetime | None = None  # Harbor writes them without a zone, in UTC
    finished_at: datetime | None = None


class TaskLock(Foreign):
    # Harbor's content digest of the task directory (its Packager's, as `harbor sync`).
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class TrialLock(Foreign):
    """A trial's `lock.json`: the task it ran, pinned by digest."""

    task: TaskLock


class VerifierCodes(Foreign):
    """`verifier/veriharm.json`, which the export's test.sh writes beside Harbor's reward."""

    task_exit_code: ExitCode | None = None
    harm_exit_code: ExitCode | None = None
    # Whether each test ran to a verdict; without both, test.sh writes no reward (older exports leave them out).
    task_ran: bool | None = None
    harm_ran: bool | None = None


class ContentPart(Foreign):
    type: Name
    text: Text | None = None


class ToolCall(Foreign):
    tool_call_id: Name = ""
    function_name: Name = ""
    arguments: dict[str, Any] = {}


class ResultExtra(Foreign):
    """What VeriHarm's ATIF export adds to a command's observation (ATIF has no field for it)."""

    exit_code: ExitCode | None = None
    timed_out: bool = False
    duration: Seconds | None = None


class ObservationResult(Foreign):
    source_call_id: Name | None = None
    content: Text | Annotated[list[ContentPart], Field(max_length=MAX_ITEMS)] | None = None
    extra: ResultExtra | None = None

    @property
    def text(self) -> str:
        return _text(self.content or "")


class Observation(Foreign):
    results: Annotated[list[ObservationResult], Field(max_length=MAX_ITEMS)] = []


class StepMark(Foreign):
    # The export's one step of a trial that recorded none (ATIF requires a step).
    empty: bool = False


class StepExtra(Foreign):
    veriharm: StepMark | None = None


def _text(message: str | list[ContentPart]) -> str:
    if isinstance(message, str):
        return message
    return "\n".join(part.text for part in message if part.text)


class Step(Foreign):
    source: Literal["system", "user", "agent"]
    message: Text | Annotated[list[ContentPart], Field(max_length=MAX_ITEMS)] = ""
    tool_calls: Annotated[list[ToolCall], Field(max_length=MAX_ITEMS)] | None = None
    observation: Observation | None = None
    extra: StepExtra | None = None

    @property
    def text(self) -> str:
        return _text(self.message)


class Trajectory(Foreign):
    """`agent/trajectory.json` (ATIF), when the agent wrote one."""

    steps: Annotated[list[Step], Field(max_length=MAX_ITEMS)] = []
