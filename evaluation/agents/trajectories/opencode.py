"""OpenCode's `opencode run --format json` output (checked on 1.18.33) as steps.

Lines (each with type, timestamp, sessionID and a `part`): `step_start`, `text` {text}, `reasoning`
{text}, `tool_use` {tool, callID, state: {status, input, output, metadata: {exit}, time: {start,
end} in ms}}, `step_finish` {reason: "tool-calls" | "stop" | ..., tokens, cost}, and `error`
{error: {name, data: {message, statusCode}}} when the run fails (after OpenCode's own retries).

OpenCode's step limit (`agent.<name>.steps`) is soft and silent: on its last step it tells the
model that tools are disabled, and its output says nothing of it. So the limit is read here from
the steps counted against the limit the run was given (`step_limit`).
"""

from __future__ import annotations

from typing import Any, Literal

from .common import (
    Cost,
    Event,
    ExitCode,
    HarnessTrajectory,
    Line,
    StepsBuilder,
    TokenCount,
    add,
    add_cost,
    json_lines,
    parse,
    tool_input_text,
)

HARNESS = "opencode"
SHELL_TOOL = "bash"


class TextPart(Event):
    text: str = ""
    messageID: str | None = None  # noqa: N815 - OpenCode's own field name


class TextLine(Event):
    type: Literal["text", "reasoning"]
    part: TextPart


class Times(Event):
    start: float | None = None
    end: float | None = None


class Metadata(Event):
    exit: ExitCode | None = None


class ToolState(Event):
    status: str = ""
    input: dict[str, Any] = {}
    output: str = ""
    error: str = ""
    metadata: Metadata | None = None
    time: Times | None = None


class ToolPart(Event):
    tool: str
    callID: str  # noqa: N815 - OpenCode's own field name
    messageID: str | None = None  # noqa: N815
    state: ToolState


class ToolLine(Event):
    type: Literal["tool_use"]
    part: ToolPart


class CacheTokens(Event):
    read: TokenCount = 0
    write: TokenCount = 0


class Tokens(Event):
    input: TokenCount = 0
    output: TokenCount = 0
    reasoning: TokenCount = 0
    cache: CacheTokens | None = None


class FinishPart(Event):
    reason: str = ""
    tokens: Tokens | None = None
    cost: Cost | None = None


class FinishLine(Event):
    type: Literal["step_finish"]
    part: FinishPart


class ErrorData(Event):
    message: str = ""
    statusCode: int | None = None  # noqa: N815 - OpenCode's own field name


class ErrorDetail(Event):
    name: str = ""
    data: ErrorData | None = None


class ErrorLine(Event):
    type: Literal["error"]
    error: ErrorDetail


def read(stdout: str, *, step_limit: int | None = None) -> HarnessTrajectory:
    """OpenCode's JSON lines as steps and its final state; `step_limit` is the `steps` the run was
    given: reaching it is how a run that hit the limit shows (the harness does not say so)."""
    steps = StepsBuilder(HARNESS)
    started = 0
    last_reason: str | None = None
    failure: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    for line in json_lines(stdout):
        if line.data is None:
            steps.not_json(line)
            continue
        kind = line.data.get("type")
        if kind == "step_start":
            started += 1
        elif kind in ("text", "reasoning"):
            text = parse(TextLine, line, steps)
            if text is not None:
                part = text.part
                steps.message(part.text if kind == "text" else f"[reasoning] {part.text}", message_id=part.messageID)
        elif kind == "tool_use":
            _tool(line, steps)
        elif kind == "step_finish":
            finish = parse(FinishLine, line, steps)
            if finish is not None:
                last_reason = finish.part.reason
                tokens = finish.part.tokens
                if tokens is not None:
                    cache = tokens.cache or CacheTokens()
                    input_tokens = add(input_tokens, tokens.input + cache.read + cache.write)
                    output_tokens = add(output_tokens, tokens.output + tokens.reasoning)
                cost = add_cost(cost, finish.part.cost)
        elif kind == "error":
            error = parse(ErrorLine, line, steps)
            if error is not None:
                failure = _failure(error.error)
        else:
            steps.unknown(line, str(kind))
    # A last step that ended asking for tools was cut short: OpenCode always follows it with another.
    finished = failure is not None or (last_reason is not None and last_reason != "tool-calls")
    return steps.finish(
        finished=finished,
        reason=("error" if failure else last_reason or "no finished step"),
        ended_in_error=failure,
        hit_turn_limit=failure is None and step_limit is not None and started >= step_limit,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        extra=f"{started} steps" + (f" of at most {step_limit}" if step_limit is not None else ""),
    )


def _tool(line: Line, steps: StepsBuilder) -> None:
    event = parse(ToolLine, line, steps)
    if event is None:
        return
    part, state = event.part, event.part.state
    command = state.input.get("command") if part.tool == SHELL_TOOL else None
    steps.call(
        part.callID,
        part.tool,
        command if isinstance(command, str) else None,
        tool_input_text(state.input),
        message_id=part.messageID,
    )
    times = state.time
    duration = None
    if times is not None and times.start is not None and times.end is not None and times.end >= times.start:
        duration = (times.end - times.start) / 1000
    exit_code = state.metadata.exit if state.metadata is not None else None
    steps.result(
        part.callID,
        state.output if state.status != "error" else (state.error or state.output),
        exit_code=exit_code if part.tool == SHELL_TOOL else None,
        duration=duration,
        failed=state.status == "error",
    )


def _failure(error: ErrorDetail) -> str:
    data = error.data or ErrorData()
    status = f" (HTTP {data.statusCode})" if data.statusCode is not None else ""
    return f"{error.name or 'error'}{status}: {data.message or 'no message'}"
