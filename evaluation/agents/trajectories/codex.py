"""Codex's `codex exec --json` output (checked on 0.171.0) as steps.

Lines: `thread.started`, `turn.started`, `item.started` / `item.updated` / `item.completed` (items
of type agent_message, reasoning, command_execution {command, aggregated_output, exit_code,
status}, file_change, mcp_tool_call, web_search, todo_list, error: a warning), `turn.completed`
{usage} or `turn.failed` {error}, and `error` {message} (a retry, or the failure itself). Codex
reports no durations and no cost, and has no turn limit: a run that never ends is cut by the exec's
timeout, and its output then simply stops.
"""

from __future__ import annotations

from typing import Any, Literal

from .common import (
    Event,
    ExitCode,
    HarnessTrajectory,
    Line,
    StepsBuilder,
    TokenCount,
    add,
    json_lines,
    parse,
    tool_input_text,
)

HARNESS = "codex"


class Item(Event):
    id: str
    type: str


class TextItem(Item):
    text: str = ""


class CommandItem(Item):
    command: str
    aggregated_output: str = ""
    exit_code: ExitCode | None = None
    status: str = ""


class ErrorItem(Item):
    message: str = ""


class ItemLine(Event):
    type: Literal["item.started", "item.updated", "item.completed"]
    item: dict[str, Any]


class Usage(Event):
    input_tokens: TokenCount = 0
    cached_input_tokens: TokenCount = 0
    output_tokens: TokenCount = 0


class TurnCompleted(Event):
    type: Literal["turn.completed"]
    usage: Usage | None = None


class Failure(Event):
    message: str = ""


class TurnFailed(Event):
    type: Literal["turn.failed"]
    error: Failure | None = None


class ErrorLine(Event):
    type: Literal["error"]
    message: str = ""


def read(stdout: str, *, step_limit: int | None = None) -> HarnessTrajectory:
    """Codex's JSONL events as steps and its final state (Codex has no step limit to hit)."""
    steps = StepsBuilder(HARNESS)
    ended: str | None = None  # "turn.completed" or "turn.failed": the last turn's end
    failure: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    last_seen = "no event"
    for line in json_lines(stdout):
        if line.data is None:
            steps.not_json(line)
            continue
        kind = line.data.get("type")
        last_seen = str(kind)
        if kind in ("item.started", "item.updated", "item.completed"):
            _item(line, steps)
        elif kind == "turn.completed":
            completed = parse(TurnCompleted, line, steps)
            if completed is not None:
                ended, failure = "turn.completed", None
                if completed.usage is not None:
                    input_tokens = add(input_tokens, completed.usage.input_tokens)
                    output_tokens = add(output_tokens, completed.usage.output_tokens)
        elif kind == "turn.failed":
            failed = parse(TurnFailed, line, steps)
            if failed is not None:
                ended = "turn.failed"
                failure = (failed.error.message if failed.error else "") or "the turn failed"
        elif kind == "error":
            error = parse(ErrorLine, line, steps)
            if error is not None:
                steps.note(f"codex error: {error.message}")
        elif kind not in ("thread.started", "turn.started"):
            steps.unknown(line, str(kind))
    return steps.finish(
        finished=ended is not None,
        reason=ended or f"last event {last_seen}",
        ended_in_error=failure,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def _item(line: Line, steps: StepsBuilder) -> None:
    event = parse(ItemLine, line, steps)
    if event is None:
        return
    raw = Line(line.number, line.text, event.item)
    head = parse(Item, raw, steps)
    if head is None:
        return
    done = event.type == "item.completed"
    if head.type == "command_execution":
        command = parse(CommandItem, raw, steps)
        if command is None:
            return
        if command.id not in steps.pending and (done or event.type == "item.started"):
            steps.call(command.id, "shell", command.command, command.command)
        if done:
            steps.result(
                command.id,
                command.aggregated_output,
                exit_code=command.exit_code,
                failed=command.status == "failed",
            )
    elif not done:
        return  # other items are read once, complete
    elif head.type == "agent_message":
        text = parse(TextItem, raw, steps)
        if text is not None:
            steps.message(text.text)
    elif head.type == "reasoning":
        text = parse(TextItem, raw, steps)
        if text is not None and text.text.strip():
            steps.message(f"[reasoning] {text.text}")
    elif head.type == "error":
        error = parse(ErrorItem, raw, steps)
        if error is not None:
            steps.note(f"codex warning: {error.message}")
    else:
        # file_change, mcp_tool_call, web_search, todo_list: what the harness did beside the shell.
        details = {key: value for key, value in event.item.items() if key not in ("id", "type")}
        steps.note(f"codex {head.type}: {tool_input_text(details)}")
