"""Claude Code's `--output-format stream-json --verbose` output (checked on 2.1.337) as steps.

Lines: `system` (init, api_retry), `assistant` (one content block per line: the text and the
tool_use of one model message come as two lines with the same message id), `user` (the
tool_result of a call), and a final `result`. A Bash result carries no exit code of its own: a
command that exits non-zero comes back with is_error and its output prefixed "Exit code N". The
result's `subtype` alone does not say a run failed: an upstream that keeps failing ends with subtype
"success", is_error true and terminal_reason "api_error"; the turn limit with "error_max_turns".
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
    exit_status,
    json_lines,
    parse,
    timestamp,
    tool_input_text,
)

HARNESS = "claude-code"
SHELL_TOOL = "Bash"
# The model name on a message the CLI wrote itself (its account of a failed call), not the model.
SYNTHETIC = "<synthetic>"
_EXIT_PREFIX = re.compile(r"\AExit code (-?\d+)(?:\n|\Z)")


class TextBlock(Event):
    type: Literal["text"]
    text: str


class ThinkingBlock(Event):
    type: Literal["thinking"]
    thinking: str = ""


class ToolUseBlock(Event):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class AssistantMessage(Event):
    id: str | None = None
    model: str | None = None
    content: list[dict[str, Any]]


class AssistantLine(Event):
    type: Literal["assistant"]
    message: AssistantMessage
    timestamp: str | None = None


class TextPart(Event):
    type: str
    text: str = ""


class ToolResultBlock(Event):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[TextPart] = ""
    is_error: bool = False


class UserMessage(Event):
    content: str | list[dict[str, Any]]


class UserLine(Event):
    type: Literal["user"]
    message: UserMessage
    timestamp: str | None = None


class ApiRetry(Event):
    subtype: Literal["api_retry"]
    attempt: int | None = None
    max_retries: int | None = None
    error_status: int | None = None
    error: str | None = None


class Usage(Event):
    input_tokens: TokenCount = 0
    output_tokens: TokenCount = 0
    cache_creation_input_tokens: TokenCount = 0
    cache_read_input_tokens: TokenCount = 0


class ResultLine(Event):
    type: Literal["result"]
    subtype: str = ""
    is_error: bool = False
    terminal_reason: str | None = None
    result: str | None = None
    errors: list[str] | None = None
    num_turns: int | None = None
    total_cost_usd: Cost | None = None
    usage: Usage | None = None
    api_error_status: int | None = None


def read(stdout: str, *, step_limit: int | None = None) -> HarnessTrajectory:
    """Claude Code's stream-json output as steps and its final state (`--max-turns` is reported by
    the harness itself: `step_limit` is not needed)."""
    steps = StepsBuilder(HARNESS)
    final: ResultLine | None = None
    for line in json_lines(stdout):
        if line.data is None:
            steps.not_json(line)
            continue
        kind = line.data.get("type")
        if kind == "assistant":
            _assistant(line, steps)
        elif kind == "user":
            _user(line, steps)
        elif kind == "system":
            _system(line, steps)
        elif kind == "result":
            final = parse(ResultLine, line, steps) or final
        else:
            steps.unknown(line, str(kind))
    if final is None:
        return steps.finish(finished=False, reason="no result line")
    return _finish(final, steps)


def _assistant(line: Line, steps: StepsBuilder) -> None:
    event = parse(AssistantLine, line, steps)
    if event is None:
        return
    message_id = event.message.id
    for raw in event.message.content:
        kind = raw.get("type")
        if kind == "text":
            text = parse(TextBlock, Line(line.number, line.text, raw), steps)
            if text is not None and event.message.model == SYNTHETIC:
                steps.note(f"claude-code's own message (no model wrote it): {text.text}")
            elif text is not None:
                steps.message(text.text, message_id=message_id)
        elif kind == "thinking":
            thinking = parse(ThinkingBlock, Line(line.number, line.text, raw), steps)
            if thinking is not None and thinking.thinking.strip():
                steps.message(f"[thinking] {thinking.thinking}", message_id=message_id)
        elif kind == "tool_use":
            use = parse(ToolUseBlock, Line(line.number, line.text, raw), steps)
            if use is None:
                continue
            command = use.input.get("command") if use.name == SHELL_TOOL else None
            steps.call(
                use.id,
                use.name,
                command if isinstance(command, str) else None,
                tool_input_text(use.input),
                message_id=message_id,
                started=timestamp(event.timestamp),
            )
        elif kind != "redacted_thinking":
            steps.unknown(line, f"assistant content {kind}")


def _user(line: Line, steps: StepsBuilder) -> None:
    event = parse(UserLine, line, steps)
    if event is None or isinstance(event.message.content, str):
        return  # a user message of text: the task itself, already the trial's
    for raw in event.message.content:
        if raw.get("type") != "tool_result":
            continue
        block = parse(ToolResultBlock, Line(line.number, line.text, raw), steps)
        if block is None:
            continue
        output = block.content if isinstance(block.content, str) else "\n".join(p.text for p in block.content)
        exit_code: int | None = 0
        if block.is_error:
            found = _EXIT_PREFIX.match(output)
            exit_code = exit_status(found.group(1)) if found else None
            if found:
                output = output[found.end() :]
        if block.tool_use_id in steps.pending and steps.pending[block.tool_use_id].command is None:
            exit_code = None  # another tool's result: an exit status is a command's
        steps.result(
            block.tool_use_id,
            output,
            exit_code=exit_code,
            failed=block.is_error,
            ended=timestamp(event.timestamp),
        )


def _system(line: Line, steps: StepsBuilder) -> None:
    if line.data is None or line.data.get("subtype") != "api_retry":
        return  # init and the like: the session's settings, not a step
    retry = parse(ApiRetry, line, steps)
    if retry is None:
        return
    status = f"HTTP {retry.error_status}" if retry.error_status is not None else "no HTTP status"
    steps.note(
        f"claude-code's model call failed ({status}, {retry.error or 'unknown error'}); "
        f"retry {retry.attempt} of {retry.max_retries}"
    )


def _finish(final: ResultLine, steps: StepsBuilder) -> HarnessTrajectory:
    hit_limit = final.subtype == "error_max_turns" or final.terminal_reason == "max_turns"
    reason = final.subtype or "result"
    if final.terminal_reason:
        reason += f" ({final.terminal_reason})"
    error = None
    if final.is_error and not hit_limit:
        error = final.result or "; ".join(final.errors or []) or reason
    usage = final.usage
    return steps.finish(
        finished=True,
        reason=reason,
        ended_in_error=error,
        hit_turn_limit=hit_limit,
        # Every input token, cached or not: the harness bills them apart, the run used them all.
        input_tokens=(
            usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens if usage else None
        ),
        output_tokens=usage.output_tokens if usage else None,
        cost_usd=final.total_cost_usd,
        extra=f"{final.num_turns} turns" if final.num_turns is not None else "",
    )
