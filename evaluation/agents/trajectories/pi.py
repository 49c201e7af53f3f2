"""Pi's `pi -p --mode json` output (checked on 0.73.1) as steps.

Lines: `session`, `agent_start`, `turn_start`, `message_start` / `message_update` (every streamed
delta, with the whole partial message) / `message_end` {message}, `tool_execution_start` /
`_update` / `_end` {toolCallId, toolName, result: {content}, isError}, `turn_end`, `agent_end`, and
`auto_retry_start` / `auto_retry_end` around a retried failure (a retry starts the agent again).

Pi exits 0 even when its model call failed for good: the failure is the last assistant message's
`stopReason` ("error", with `errorMessage`), which is what this reader reports. A bash result has
no exit-code field: a non-zero exit is `isError` with the text ending "Command exited with code
N". Pi has no turn limit, and reports no durations.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from .common import (
    Cost,
    Event,
    HarnessTrajectory,
    Line,
    StepsBuilder,
    TokenCount,
    add,
    add_cost,
    exit_status,
    json_lines,
    parse,
    tool_input_text,
)

HARNESS = "pi"
SHELL_TOOL = "bash"
_EXIT_SUFFIX = re.compile(r"\n*Command exited with code (-?\d+)\s*\Z")
# The stop reasons that end a run without the agent's own answer.
FAILED_STOPS = {"error": "the model call failed", "aborted": "the run was aborted"}


class UsageCost(Event):
    total: Cost | None = None


class Usage(Event):
    input: TokenCount = 0
    output: TokenCount = 0
    cacheRead: TokenCount = 0  # noqa: N815 - Pi's own field names
    cacheWrite: TokenCount = 0  # noqa: N815
    cost: UsageCost | None = None


class Message(Event):
    role: str
    content: str | list[dict[str, Any]] = []
    usage: Usage | None = None
    stopReason: str | None = None  # noqa: N815
    errorMessage: str | None = None  # noqa: N815


class MessageEnd(Event):
    type: Literal["message_end"]
    message: Message


class TextBlock(Event):
    type: Literal["text"]
    text: str = ""


class ThinkingBlock(Event):
    type: Literal["thinking"]
    thinking: str = ""


class ToolCallBlock(Event):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any] = {}


class ResultContent(Event):
    type: str
    text: str = ""


class ToolResult(Event):
    content: list[ResultContent] = []


class ToolEnd(Event):
    type: Literal["tool_execution_end"]
    toolCallId: str  # noqa: N815
    toolName: str = ""  # noqa: N815
    result: ToolResult | None = None
    isError: bool = False  # noqa: N815


class RetryStart(Event):
    type: Literal["auto_retry_start"]
    attempt: int | None = None
    maxAttempts: int | None = None  # noqa: N815
    errorMessage: str = ""  # noqa: N815


class RetryEnd(Event):
    type: Literal["auto_retry_end"]
    success: bool = False
    finalError: str | None = None  # noqa: N815


# Every streamed delta, each with the whole message so far: most of Pi's output by far (three
# quarters of a short run's bytes), and all of it repeated by message_end. Passed over unparsed.
_STREAMED = ('{"type":"message_update"', '{"type":"tool_execution_update"')
# Read for their content elsewhere (message_end, tool_execution_end) or of no use to a transcript.
_PASSED = {
    "session",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "tool_execution_start",
    "tool_execution_update",
}


def read(stdout: str, *, step_limit: int | None = None) -> HarnessTrajectory:
    """Pi's JSON lines as steps and its final state (Pi has no step limit to hit)."""
    steps = StepsBuilder(HARNESS)
    running = False
    ended = False
    stop: Message | None = None  # the last assistant message: its stopReason is how the run ended
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    for line in json_lines(stdout, skip=_STREAMED):
        if line.data is None:
            steps.not_json(line)
            continue
        kind = line.data.get("type")
        if kind == "agent_start":
            running = True
        elif kind == "agent_end":
            running, ended = False, True
        elif kind == "message_end":
            event = parse(MessageEnd, line, steps)
            if event is not None and event.message.role == "assistant":
                stop = event.message
                _assistant(line, event.message, steps)
                if event.message.usage is not None:
                    usage = event.message.usage
                    input_tokens = add(input_tokens, usage.input + usage.cacheRead + usage.cacheWrite)
                    output_tokens = add(output_tokens, usage.output)
                    cost = add_cost(cost, usage.cost.total if usage.cost else None)
        elif kind == "tool_execution_end":
            _tool_end(line, steps)
        elif kind == "auto_retry_start":
            retry = parse(RetryStart, line, steps)
            if retry is not None:
                steps.note(f"pi retries the model call (attempt {retry.attempt} of {retry.maxAttempts})")
        elif kind == "auto_retry_end":
            retried = parse(RetryEnd, line, steps)
            if retried is not None and not retried.success:
                steps.note(f"pi gave up retrying: {retried.finalError or 'no error given'}")
        elif kind not in _PASSED:
            steps.unknown(line, str(kind))
    finished = ended and not running
    reason = (stop.stopReason if stop is not None else None) or ("agent_end" if finished else "no agent_end")
    failure = None
    if stop is not None and stop.stopReason in FAILED_STOPS:
        failure = stop.errorMessage or FAILED_STOPS[stop.stopReason]
    return steps.finish(
        finished=finished,
        reason=f"stopReason {reason}" if stop is not None and stop.stopReason else reason,
        ended_in_error=failure,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
    )


def _assistant(line: Line, message: Message, steps: StepsBuilder) -> None:
    if message.stopReason in FAILED_STOPS:
        steps.note(f"pi's model call ended in {message.stopReason}: {message.errorMessage or 'no message'}")
    if isinstance(message.content, str):
        steps.message(message.content)
        return
    for raw in message.content:
        block = Line(line.number, line.text, raw)
        kind = raw.get("type")
        if kind == "text":
            text = parse(TextBlock, block, steps)
            if text is not None:
                steps.message(text.text)
        elif kind == "thinking":
            thinking = parse(ThinkingBlock, block, steps)
            if thinking is not None and thinking.thinking.strip():
                steps.message(f"[thinking] {thinking.thinking}")
        elif kind == "toolCall":
            call = parse(ToolCallBlock, block, steps)
            if call is not None:
                command = call.arguments.get("command") if call.name == SHELL_TOOL else None
                steps.call(
                    call.id, call.name, command if isinstance(command, str) else None, tool_input_text(call.arguments)
                )
        else:
            steps.unknown(line, f"assistant content {kind}")


def _tool_end(line: Line, steps: StepsBuilder) -> None:
    event = parse(ToolEnd, line, steps)
    if event is None:
        return
    output = "\n".join(part.text for part in (event.result.content if event.result else []) if part.type == "text")
    shell = event.toolName == SHELL_TOOL
    exit_code: int | None = 0 if shell and not event.isError else None
    found = _EXIT_SUFFIX.search(output) if shell and event.isError else None
    if found:
        exit_code = exit_status(found.group(1))
        output = output[: found.start()]
    steps.result(
        event.toolCallId,
        output,
        exit_code=exit_code,
        failed=event.isError,
        fallback=(event.toolName or "a tool", None),
    )
