"""A scripted model turn written in each API's wire shapes (pure: no server, no Django, no database).

The demo's scripted model (`demo.native.model`) answers native harnesses with them, and the tests'
loopback model server (tests/evaluation/chat_server.py) speaks them too.

One turn model (`Turn`: text, and shell tool calls) and four dialect writers, each writing a whole
answer and the events of a streamed one as the real API does:

* `chat` (OpenAI chat completions): `message.tool_calls`; streamed, `delta.tool_calls` (the id and
  function name first, then the arguments in pieces), a last chunk with `finish_reason`, the usage
  chunk when `stream_options.include_usage` asked for it, `[DONE]`.
* `responses` (OpenAI responses): `function_call` output items; streamed, `response.output_item.added`
  / `response.function_call_arguments.delta` / `.done` / `response.output_item.done`, then
  `response.completed` carrying the whole response with its output items and usage.
* `messages` (Anthropic): `tool_use` content blocks; streamed, `message_start`, then per block
  `content_block_start` / `content_block_delta` (`text_delta`, or `input_json_delta` with
  `partial_json`) / `content_block_stop`, `message_delta` with the stop reason and the output usage,
  `message_stop`.
* `gemini` (generateContent): `functionCall` parts, `finishReason` STOP and `usageMetadata`; streamed,
  one chunk per piece of text, the calls whole in the last chunk, which alone carries the full usage.

Each CLI names its shell tool differently (Claude Code `Bash`, OpenCode and Pi `bash`, Gemini CLI
`run_shell_command`, Codex `shell`, `exec_command` or `shell_command`): `shell_tool` takes the
first declared tool whose name is a known shell tool's, and fills its argument shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

DIALECTS = ("chat", "responses", "messages", "gemini")
SHELL_TOOL_NAMES = ("bash", "Bash", "shell", "exec_command", "shell_command", "run_shell_command")
# The command fields of the shell tools, in the order they are looked for.
COMMAND_FIELDS = ("command", "cmd")
DESCRIPTION = "Run the scripted command"
# Characters of text (and of tool arguments) per streamed event.
TEXT_PIECE = 5
ARGUMENT_PIECE = 8

Event = dict[str, Any] | str


def dialect_of(path: str) -> str | None:
    """The dialect a request path speaks (its query string left off), or None."""
    if path == "/v1/chat/completions":
        return "chat"
    if path == "/v1/responses":
        return "responses"
    if path == "/v1/messages":
        return "messages"
    if path.startswith("/v1beta/models/") and path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    return None


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Turn:
    """What the model says in one turn: text (the final answer, or reasoning beside the calls) and
    the calls of its shell tool; no calls means the turn ends the conversation."""

    text: str | None
    calls: tuple[ToolCall, ...] = field(default_factory=tuple)

    @property
    def finish(self) -> str:
        """The chat completions finish_reason."""
        return "tool_calls" if self.calls else "stop"


def declared_tools(dialect: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tools a request declares, as (name, JSON schema of the arguments), in each dialect's shape."""
    tools = body.get("tools")
    found: list[tuple[str, dict[str, Any]]] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        if dialect == "gemini":
            for declaration in tool.get("functionDeclarations") or []:
                if isinstance(declaration, dict):
                    schema = declaration.get("parameters") or declaration.get("parametersJsonSchema") or {}
                    found.append((str(declaration.get("name", "")), schema))
            continue
        if dialect == "chat":
            function = tool.get("function")
            function = function if isinstance(function, dict) else {}
            name, schema = function.get("name"), function.get("parameters")
        elif dialect == "messages":
            name, schema = tool.get("name"), tool.get("input_schema")
        else:  # responses: flat {"type": "function", "name", "parameters"}
            name, schema = tool.get("name"), tool.get("parameters")
        found.append((str(name or ""), schema if isinstance(schema, dict) else {}))
    return found


def _type(schema: Any) -> str:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):  # ["string", "null"]
        kind = next((k for k in kind if k != "null"), "")
    return str(kind or "").lower()


@dataclass(frozen=True)
class ShellTool:
    name: str
    schema: dict[str, Any] = field(default_factory=dict)

    def arguments(self, command: str) -> dict[str, Any]:
        """The tool's arguments running `command`: its command field (an array-typed one gets
        ["bash", "-lc", command]) and a short text for a required description."""
        properties = self.schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = [r for r in self.schema.get("required") or [] if isinstance(r, str)]
        present = [name for name in COMMAND_FIELDS if name in properties]
        # A required command field first; else the first one the tool has; else "command".
        target = next((name for name in present if name in required), present[0] if present else "command")
        value: Any = ["bash", "-lc", command] if _type(properties.get(target)) == "array" else command
        arguments: dict[str, Any] = {target: value}
        if "description" in required:
            arguments["description"] = DESCRIPTION
        return arguments


def shell_tool(dialect: str, body: dict[str, Any]) -> ShellTool:
    """The first declared tool named as a shell tool; `bash` {command} when none is declared."""
    for name, schema in declared_tools(dialect, body):
        if name in SHELL_TOOL_NAMES:
            return ShellTool(name, schema)
    return ShellTool("bash")


def scripted_turn(step: list[str] | str, tool: ShellTool, *, index: int, thought: str | None) -> Turn:
    """A turn of the script: a str is the final answer, a list the commands to call this turn."""
    if isinstance(step, str):
        return Turn(step)
    calls = tuple(ToolCall(f"call_{index}_{i}", tool.name, tool.arguments(command)) for i, command in enumerate(step))
    return Turn(thought, calls)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- whole answers ------------------------------------------------------------------------------


def chat_whole(turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for c in turn.calls
        ]
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": turn.finish}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def _function_call_item(call: ToolCall, *, status: str = "completed", arguments: str | None = None) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call.id}",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments_json if arguments is None else arguments,
        "status": status,
    }


def _message_item(text: str, index: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{index}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def responses_whole(turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> dict[str, Any]:
    output = [_message_item(turn.text, index)] if turn.text is not None else []
    output += [_function_call_item(c) for c in turn.calls]
    return {
        "id": f"resp_{index}",
        "object": "response",
        "status": "completed",
        "model": model,
        "output": output,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": sum(usage)},
    }


def messages_whole(turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text is not None else []
    content += [{"type": "tool_use", "id": f"toolu_{c.id}", "name": c.name, "input": c.arguments} for c in turn.calls]
    return {
        "id": f"msg_{index}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def _usage_metadata(usage: tuple[int, int]) -> dict[str, int]:
    return {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1], "totalTokenCount": sum(usage)}


def gemini_whole(turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text is not None else []
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in turn.calls]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _usage_metadata(usage),
        "modelVersion": model,
        "responseId": f"gemini-{index}",
    }


WHOLE = {"chat": chat_whole, "responses": responses_whole, "messages": messages_whole, "gemini": gemini_whole}


def whole(dialect: str, turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> dict[str, Any]:
    return WHOLE[dialect](turn, model=model, usage=usage, index=index)


# --- streamed answers ---------------------------------------------------------------------------


def chat_events(turn: Turn, *, model: str, usage: tuple[int, int], index: int, include_usage: bool) -> list[Event]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[Event] = []
    if turn.text is not None:
        events += [chunk({"content": piece}) for piece in _pieces(turn.text, TEXT_PIECE)]
    for i, call in enumerate(turn.calls):
        start = {"index": i, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        events.append(chunk({"tool_calls": [start]}))
        events += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            for piece in _pieces(call.arguments_json, ARGUMENT_PIECE)
        ]
    events.append(chunk({}, turn.finish))
    if include_usage:
        events.append(
            {
                "id": f"chatcmpl-{index}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
            }
        )
    return [*events, "[DONE]"]


def responses_events(turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> list[Event]:
    events: list[Event] = [{"type": "response.created", "response": {"id": f"resp_{index}", "status": "in_progress"}}]
    position = 0
    if turn.text is not None:
        item = _message_item(turn.text, index)
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": [], "status": "in_progress"},
            }
        )
        events += [
            {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "delta": p,
            }
            for p in _pieces(turn.text, TEXT_PIECE)
        ]
        events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
        position = 1
    for offset, call in enumerate(turn.calls):
        at = position + offset
        item_id = f"fc_{call.id}"
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": at,
                "item": _function_call_item(call, status="in_progress", arguments=""),
            }
        )
        events += [
            {"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": at, "delta": p}
            for p in _pieces(call.arguments_json, ARGUMENT_PIECE)
        ]
        events.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item_id,
                "output_index": at,
                "arguments": call.arguments_json,
            }
        )
        events.append({"type": "response.output_item.done", "output_index": at, "item": _function_call_item(call)})
    events.append(
        {"type": "response.completed", "response": responses_whole(turn, model=model, usage=usage, index=index)}
    )
    return events


def messages_events(turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> list[Event]:
    start = {**messages_whole(turn, model=model, usage=usage, index=index), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": usage[0], "output_tokens": 1}
    events: list[Event] = [{"type": "message_start", "message": start}]
    block = 0
    if turn.text is not None:
        events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        events += [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in _pieces(turn.text, TEXT_PIECE)
        ]
        events.append({"type": "content_block_stop", "index": 0})
        block = 1
    for offset, call in enumerate(turn.calls):
        at = block + offset
        events.append(
            {
                "type": "content_block_start",
                "index": at,
                "content_block": {"type": "tool_use", "id": f"toolu_{call.id}", "name": call.name, "input": {}},
            }
        )
        events += [
            {"type": "content_block_delta", "index": at, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in _pieces(call.arguments_json, ARGUMENT_PIECE)
        ]
        events.append({"type": "content_block_stop", "index": at})
    stop = "tool_use" if turn.calls else "end_turn"
    return [
        *events,
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage[1]},
        },
        {"type": "message_stop"},
    ]


def gemini_events(turn: Turn, *, model: str, usage: tuple[int, int], index: int) -> list[Event]:
    """Text in pieces, each chunk with the prompt's count so far; the calls, finishReason and the
    full usage in the last chunk, as Gemini sends them (a functionCall is never split)."""

    def chunk(parts: list[dict[str, Any]], *, last: bool) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if last:
            candidate["finishReason"] = "STOP"
        metadata = _usage_metadata(usage) if last else {"promptTokenCount": usage[0], "totalTokenCount": usage[0]}
        return {
            "candidates": [candidate],
            "usageMetadata": metadata,
            "modelVersion": model,
            "responseId": f"gemini-{index}",
        }

    texts = [{"text": p} for p in _pieces(turn.text, TEXT_PIECE)] if turn.text is not None else []
    calls = [{"functionCall": {"name": c.name, "args": c.arguments}} for c in turn.calls]
    if calls or not texts:
        return [*(chunk([t], last=False) for t in texts), chunk(calls, last=True)]
    return [*(chunk([t], last=False) for t in texts[:-1]), chunk([texts[-1]], last=True)]


def events(
    dialect: str, turn: Turn, *, model: str, usage: tuple[int, int], index: int, include_usage: bool = True
) -> list[Event]:
    if dialect == "chat":
        return chat_events(turn, model=model, usage=usage, index=index, include_usage=include_usage)
    if dialect == "responses":
        return responses_events(turn, model=model, usage=usage, index=index)
    if dialect == "messages":
        return messages_events(turn, model=model, usage=usage, index=index)
    return gemini_events(turn, model=model, usage=usage, index=index)
