"""The Agent Trajectory Interchange Format (ATIF) as this application writes it: Harbor's
`agent/trajectory.json`, which Harbor Hub, Docent and Inspect Scout read. Our own typed models of
the fields we fill, as Harbor 0.25 defines them (`harbor.models.trajectories`, schema ATIF-v1.7:
observation results with `extra`); Harbor is not a runtime requirement, so these describe its JSON,
not its classes. Unknown fields are refused, as Harbor's own models refuse them (pure: no database)."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION: Final = "ATIF-v1.7"


class Atif(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Agent(Atif):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


class ToolCall(Atif):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class ObservationResult(Atif):
    source_call_id: str | None = None
    content: str | None = None
    # What ATIF has no field for (a command's exit code, its time limit, its duration).
    extra: dict[str, Any] | None = None


class Observation(Atif):
    results: list[ObservationResult]


class Metrics(Atif):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None


class Step(Atif):
    step_id: int = Field(ge=1)
    timestamp: str | None = None  # ISO 8601
    source: Literal["system", "user", "agent"]
    message: str
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Trajectory(Atif):
    schema_version: Literal["ATIF-v1.7"] = SCHEMA_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    extra: dict[str, Any] | None = None
