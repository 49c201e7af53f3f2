"""An Inspect AI eval log (`.eval`) as this application writes one: our own typed models of the
fields we fill, as Inspect 0.3 (log schema version 2) defines them in `inspect_ai.log` (`EvalLog`,
`EvalSpec`, `EvalSample`, `EvalSampleSummary`) and `inspect_ai.model` (the chat messages).
inspect-ai is a development requirement only: these describe its JSON, not its classes (pure)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

LOG_SCHEMA_VERSION: Final = 2
# The scorer a release's Inspect task runs, and whose scores an imported Inspect log is read by
# (`evaluation.imported_runs`, built on runs, takes it from here).
SCORER: Final = "veriharm_scorer"


class Inspect(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ToolCall(Inspect):
    id: str
    function: str
    arguments: dict[str, Any]
    type: Literal["function"] = "function"


class UserMessage(Inspect):
    role: Literal["user"] = "user"
    content: str
    source: Literal["input"] = "input"


class AssistantMessage(Inspect):
    role: Literal["assistant"] = "assistant"
    content: str
    tool_calls: list[ToolCall] | None = None
    model: str | None = None
    source: Literal["generate"] = "generate"


class ToolMessage(Inspect):
    role: Literal["tool"] = "tool"
    content: str
    tool_call_id: str
    function: str
    # What a message has no field for: the command's exit code, time limit and duration.
    metadata: dict[str, Any] | None = None


Message = UserMessage | AssistantMessage | ToolMessage


class Score(Inspect):
    value: dict[str, int]
    explanation: str | None = None
    metadata: dict[str, Any] | None = None


class ModelUsage(Inspect):
    input_tokens: int
    output_tokens: int
    total_tokens: int
    total_cost: float | None = None


class SampleError(Inspect):
    message: str
    traceback: str = ""
    traceback_ansi: str = ""


class Sample(Inspect):
    id: str
    epoch: int
    input: str
    target: str = ""
    messages: list[Message]
    metadata: dict[str, Any]
    scores: dict[str, Score] | None = None
    model_usage: dict[str, ModelUsage] = {}
    error: SampleError | None = None
    total_time: float | None = None
    started_at: str | None = None
    completed_at: str | None = None


class SampleSummary(Inspect):
    id: str
    epoch: int
    input: str
    target: str = ""
    metadata: dict[str, Any]
    scores: dict[str, Score] | None = None
    error: str | None = None
    completed: bool = True


class Dataset(Inspect):
    name: str
    samples: int
    sample_ids: list[str]


class Spec(Inspect):
    eval_id: str
    run_id: str
    created: str
    task: str
    task_id: str
    task_version: int | str
    dataset: Dataset
    solver: str
    model: str
    config: dict[str, Any] = {}
    packages: dict[str, str] = {}
    metadata: dict[str, Any]


class PlanStep(Inspect):
    solver: str
    params: dict[str, Any] = {}


class Plan(Inspect):
    name: str = "plan"
    steps: list[PlanStep]


class Start(Inspect):
    """`_journal/start.json`: what Inspect writes when an eval starts."""

    version: int = LOG_SCHEMA_VERSION
    eval: Spec
    plan: Plan


class Header(Inspect):
    """`header.json`: the finished log without its samples."""

    version: int = LOG_SCHEMA_VERSION
    status: Literal["success", "error"]
    eval: Spec
    plan: Plan
