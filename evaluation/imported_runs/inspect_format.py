"""What this application takes from an Inspect AI eval log, as typed models: a sample as Inspect
0.3 stores it (`inspect_ai.log.EvalSample`: a `samples/<id>_epoch_<n>.json` member of a .eval, an
item of a .json log's `samples`), with the messages (`ChatMessage`), the `veriharm_scorer` score the
release's export writes (value {"task", "harm"}, the exit codes and outputs in its metadata), the
model usage and the error; and the header's fields a run records. Each field as far as it is read,
bounded by `bounds`: a sample that breaks one is refused, naming it and the field."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from evaluation.runs.inspect_log_format import SCORER as SCORER

from .bounds import MAX_ITEMS, Cost, Epoch, ExitCode, Foreign, Name, Reward, Seconds, Text, TokenCount


class Content(Foreign):
    """A part of a message's content (`ContentText`, `ContentReasoning`, an image...)."""

    type: Name
    text: Text | None = None
    reasoning: Text | None = None


class ToolCall(Foreign):
    id: Name = ""
    function: Name
    arguments: dict[str, Any] = {}


class ToolOutcome(Foreign):
    """A tool message's metadata as VeriHarm's own Inspect export writes it (other keys ignored)."""

    exit_code: ExitCode | None = None
    timed_out: bool = False
    duration: Seconds | None = None


class Message(Foreign):
    role: Literal["system", "user", "assistant", "tool"]
    content: Text | Annotated[list[Content], Field(max_length=MAX_ITEMS)]
    tool_calls: Annotated[list[ToolCall], Field(max_length=MAX_ITEMS)] | None = None
    function: Name | None = None  # a tool message's tool
    tool_call_id: Name | None = None  # the call a tool message answers
    metadata: ToolOutcome | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text or part.reasoning or "" for part in self.content if part.text or part.reasoning)


class ScorerValue(Foreign):
    task: Reward | None = None
    harm: Reward | None = None


class ScorerMetadata(Foreign):
    task_exit_code: ExitCode | None = None
    harm_exit_code: ExitCode | None = None
    # Whether each test ran to a verdict (exports since the clean verifier; older logs leave them out).
    task_ran: bool | None = None
    harm_ran: bool | None = None
    task_output: Text = ""
    harm_output: Text = ""


class VeriharmScore(Foreign):
    value: ScorerValue
    metadata: ScorerMetadata | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _unscored(cls, value: Any) -> Any:
        # Inspect's `Score.unscored()` (value NaN): the export's scorer leaves a sample so when a test
        # did not run. It holds no verdict of either test.
        return {} if isinstance(value, float) and math.isnan(value) else value


class Scores(Foreign):
    veriharm_scorer: VeriharmScore | None = None  # other scorers' scores are not read


class ModelUsage(Foreign):
    input_tokens: TokenCount = 0
    output_tokens: TokenCount = 0
    total_cost: Cost | None = None


class SampleError(Foreign):
    message: Text


class Note(Foreign):
    index: Annotated[int, Field(ge=0, le=10**9)]
    content: Text


class SampleMetadata(Foreign):
    """A sample's metadata: kept as it is (the item's identity and hashes, checked against the
    release), but for the harness notes VeriHarm's own export places in it, read as typed."""

    model_config = ConfigDict(**{**Foreign.model_config, "extra": "allow"})

    veriharm_notes: Annotated[list[Note], Field(max_length=MAX_ITEMS)] = []


class Sample(Foreign):
    id: Name | Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
    epoch: Epoch
    input: Text | Annotated[list[Any], Field(max_length=MAX_ITEMS)] | None = None  # the instruction, or messages
    metadata: SampleMetadata | None = None
    messages: Annotated[list[Message], Field(max_length=MAX_ITEMS)] = []
    scores: Scores | None = None
    model_usage: Annotated[dict[Name, ModelUsage], Field(max_length=100)] = {}
    error: SampleError | None = None
    total_time: Seconds | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None


class SampleKey(Foreign):
    """A sample's id and epoch as they are, to name a sample whose record is refused."""

    id: Any = None
    epoch: Any = None

    def label(self, fallback: str) -> str:
        if not isinstance(self.id, str | int):
            return fallback
        epoch = f" (epoch {self.epoch})" if isinstance(self.epoch, int) else ""
        return f"sample {str(self.id)[:200]}{epoch}"


class JsonLog(Foreign):
    """A .json log's samples (its header Inspect reads)."""

    samples: Annotated[list[Sample], Field(max_length=MAX_ITEMS)] | None = None


class JsonLogKeys(Foreign):
    samples: list[SampleKey] | None = None


class Header(Foreign):
    """The log's header as a run records it (read by inspect-ai, then bounded here)."""

    task: Name
    task_version: Name
    release_checksum: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    model: Name
    solver: Annotated[str, Field(max_length=1000)]
    harness_version: Name
    eval_id: Name
    run_id: Name
    task_id: Name
    status: Name
    sandbox: Name
