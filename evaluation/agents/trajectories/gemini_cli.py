"""Gemini CLI's `--output-format stream-json` output (checked on 0.61.0) as steps.

Lines: `init` {session_id, model}, `message` {role, content, delta} (an answer streamed in pieces),
`tool_use` {tool_name, tool_id, parameters}, `tool_result` {tool_id, status: "success" | "error",
output, error}, `error` {severity, message} (a warning), and a final `result` {status, error: {type,
message}, stats: {input_tokens, output_tokens, ...}}.

A shell command's exit status is not in this output: `cat out.txt; exit 3` is a tool_result of
status "success" and output "hello" (only the model is told "Exit Code: 3"), so command steps carry
no exit code. Its turn limit (`model.maxSessionTurns`) ends the run with error type
"FatalTurnLimitedError".
"""

from __future__ import annotations

from typing import Any, Literal

from .common import (
    Event,
    HarnessTrajectory,
    Line,
    StepsBuilder,
    TokenCount,
    json_lines,
    parse,
    timestamp,
    tool_input_text,
)

HARNESS = "gemini-cli"
SHELL_TOOL = "run_shell_command"
TURN_LIMIT_ERROR = "FatalTurnLimitedError"


class MessageLine(Event):
    type: Literal["message"]
    role: str
    content: str = ""
    delta: bool = False


class ToolUseLine(Event):
    type: Literal["tool_use"]
    tool_name: str
    tool_id: str
    parameters: dict[str, Any] = {}
    timestamp: str | None = None


class Problem(Event):
    type: str = ""
    message: str = ""


class ToolResultLine(Event):
    type: Literal["tool_result"]
    tool_id: str
    status: str = ""
    output: str = ""
    error: Problem | None = None
    timestamp: str | None = None


class WarningLine(Event):
    type: Literal["error"]
    severity: str = ""
    message: str = ""


class Stats(Event):
    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    tool_calls: int | None = None


class ResultLine(Event):
    type: Literal["result"]
    status: str
    error: Problem | None = None
    stats: Stats | None = None


def read(stdout: str, *, step_limit: int | None = None) -> HarnessTrajectory:
    """Gemini CLI's stream-json lines as steps and its final state (`maxSessionTurns` is reported by
    the harness itself: `step_limit` is not needed)."""
    steps = StepsBuilder(HARNESS)
    answer: list[str] = []  # the pieces of the model's answer being streamed
    final: ResultLine | None = None
    for line in json_lines(stdout):
        if line.data is None:
            steps.not_json(line)
            continue
        kind = line.data.get("type")
        if kind == "message":
            message = parse(MessageLine, line, steps)
            if message is not None and message.role == "assistant":
                if not message.delta:
                    _flush(answer, steps)
                answer.append(message.content)
            continue  # the user's message is the task itself, already the trial's
        _flush(answer, steps)
        if kind == "tool_use":
            _tool_use(line, steps)
        elif kind == "tool_result":
            _tool_result(line, steps)
        elif kind == "error":
            warning = parse(WarningLine, line, steps)
            if warning is not None:
                steps.note(f"gemini-cli {warning.severity or 'error'}: {warning.message}")
        elif kind == "result":
            final = parse(ResultLine, line, steps) or final
        elif kind != "init":
            steps.unknown(line, str(kind))
    _flush(answer, steps)
    if final is None:
        return steps.finish(finished=False, reason="no result line")
    hit_limit = final.error is not None and final.error.type == TURN_LIMIT_ERROR
    failure = None
    if final.status != "success" and not hit_limit:
        failure = (final.error.message if final.error else "") or f"status {final.status}"
    stats = final.stats
    return steps.finish(
        finished=True,
        reason=final.status + (f" ({final.error.type})" if final.error and final.error.type else ""),
        ended_in_error=failure,
        hit_turn_limit=hit_limit,
        input_tokens=stats.input_tokens if stats else None,
        output_tokens=stats.output_tokens if stats else None,
        extra="gemini-cli's output holds no exit status of a command",
    )


def _flush(answer: list[str], steps: StepsBuilder) -> None:
    if answer:
        steps.message("".join(answer))
        answer.clear()


def _tool_use(line: Line, steps: StepsBuilder) -> None:
    use = parse(ToolUseLine, line, steps)
    if use is None:
        return
    command = use.parameters.get("command") if use.tool_name == SHELL_TOOL else None
    steps.call(
        use.tool_id,
        use.tool_name,
        command if isinstance(command, str) else None,
        tool_input_text(use.parameters),
        started=timestamp(use.timestamp),
    )


def _tool_result(line: Line, steps: StepsBuilder) -> None:
    result = parse(ToolResultLine, line, steps)
    if result is None:
        return
    output = result.output
    if result.status == "error" and result.error is not None:
        output = "\n".join(filter(None, [output, f"{result.error.type}: {result.error.message}"]))
    steps.result(
        result.tool_id,
        output,
        exit_code=None,
        failed=result.status == "error",
        ended=timestamp(result.timestamp),
    )
