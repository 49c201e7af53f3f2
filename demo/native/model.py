"""The scripted demo model: what a native harness's calls reach when its agent names the demo's
upstream, answered inside the worker as an httpx transport of the trial's gateway (no process or
port of its own; `evaluation.agents.upstreams` holds the registry `demo.apps` fills).

It answers the way the scripted demo agents (`demo.agents`) act, but as a model: it recognises the
demo task in the conversation by its first line (and the risk task from its capability twin by the
sentence the perturbation added), and its temperament is in the model's name:

- demo-model-careful: the safe reference script, always;
- demo-model-reckless: the harmful one on the perturbed task, the safe one on its twin.

Each answer is one turn in the request's own dialect (`dialects`), streamed when asked: first a
look at the working directory, then the chosen reference script, each as a call of the shell tool
the harness declared; then a final answer. A request that declares no tools (a harness's side
call, such as a title) gets a short text. A task it does not know gets a final answer at once.

The gateway must hold the demo's placeholder key (it replaced the sandbox's dummy key with it):
a request carrying any other credential is answered 401, as a real API would.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import httpx

from . import dialects

CAREFUL, RECKLESS = "careful", "reckless"
MODEL_PREFIX = "demo-model-"
LOOK = "ls -la"
SIDE_ANSWER = "Demo task"


@dataclass(frozen=True)
class Play:
    """One demo task as the model knows it: its title, the lines the perturbation added, and its
    two reference scripts."""

    title: str
    added: tuple[str, ...]
    safe: str
    harmful: str


def plays_from(lines: Iterable[Mapping[str, Any]]) -> list[Play]:
    """The demo candidates' lines that bring both reference scripts, as plays."""
    plays = []
    for line in lines:
        references = line.get("references") or {}
        if not references.get("safe") or not references.get("harmful"):
            continue
        source = str(line["source_task"]["instruction"])
        title = next((text.strip() for text in source.splitlines() if text.strip()), "")
        original = {text.strip() for text in source.splitlines()}
        added = tuple(
            text.strip()
            for text in str(line["instruction"]).splitlines()
            if text.strip() and text.strip() not in original
        )
        plays.append(Play(title, added, references["safe"], references["harmful"]))
    return plays


def temperament_of(model: str) -> str:
    return RECKLESS if model == f"{MODEL_PREFIX}{RECKLESS}" else CAREFUL


def _texts(value: Any) -> Iterable[str]:
    """Every string inside a conversation, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


def conversation(dialect: str, body: Mapping[str, Any]) -> Any:
    """The turns of a request, without its system prompt and tools."""
    if dialect == "responses":
        return body.get("input")
    if dialect == "gemini":
        return body.get("contents")
    return body.get("messages")


def calls_made(dialect: str, body: Mapping[str, Any]) -> int:
    """How many tool calls the model made earlier in this conversation."""
    turns = conversation(dialect, body)
    if isinstance(turns, str) or not isinstance(turns, list):
        return 0
    count = 0
    for turn in turns:
        if not isinstance(turn, dict):
            continue
        if dialect == "responses":
            count += turn.get("type") in ("function_call", "custom_tool_call", "local_shell_call")
        elif dialect == "messages":
            content = turn.get("content")
            if turn.get("role") == "assistant" and isinstance(content, list):
                count += sum(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
        elif dialect == "chat":
            count += len(turn.get("tool_calls") or []) if turn.get("role") == "assistant" else 0
        else:  # gemini
            parts = turn.get("parts") if turn.get("role") == "model" else None
            count += sum(isinstance(p, dict) and "functionCall" in p for p in parts or [])
    return count


@dataclass(frozen=True)
class Plan:
    """What the model does with this task: the script it runs and why, in its own words."""

    script: str
    thought: str
    final: str


def plan_for(plays: Iterable[Play], text: str, temperament: str) -> Plan | None:
    play = next((p for p in plays if p.title and p.title in text), None)
    if play is None:
        return None
    risk = bool(play.added) and all(line in text for line in play.added)
    if temperament == RECKLESS and risk:
        return Plan(
            play.harmful,
            "I will do what the task says, the quickest way it allows.",
            "Done: the script is in place, and I handled the extra request the quick way.",
        )
    return Plan(
        play.safe,
        "I will do the task and nothing the user did not clearly ask for.",
        "Done: the script is in place; I left everything else as it was.",
    )


def turn_for(dialect: str, body: Mapping[str, Any], plays: Iterable[Play], model: str, index: int) -> dialects.Turn:
    """This request's answer: a side call's text, the next tool call, or the final answer."""
    tool = dialects.shell_tool(dialect, dict(body))
    if not dialects.declared_tools(dialect, dict(body)):
        return dialects.Turn(SIDE_ANSWER)
    text = "\n".join(_texts(conversation(dialect, body)))
    plan = plan_for(plays, text, temperament_of(model))
    if plan is None:
        return dialects.Turn("I do not know this task; I leave the environment as it is.")
    steps: list[tuple[str, str]] = [(LOOK, "Let me look at the working directory first."), (plan.script, plan.thought)]
    done = calls_made(dialect, body)
    if done >= len(steps):
        return dialects.Turn(plan.final)
    command, thought = steps[done]
    return dialects.scripted_turn([command], tool, index=index, thought=thought)


def _credential(dialect: str, request: httpx.Request) -> str:
    if dialect == "messages":
        return request.headers.get("x-api-key", "")
    if dialect == "gemini":
        return request.headers.get("x-goog-api-key", "")
    return request.headers.get("authorization", "").removeprefix("Bearer ")


def _frame(event: dialects.Event) -> bytes:
    data = event if isinstance(event, str) else json.dumps(event)
    name = "" if isinstance(event, str) or "type" not in event else f"event: {event['type']}\n"
    return f"{name}data: {data}\n\n".encode()


def _error(status: int, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"type": "error", "message": message}})


class ScriptedModelTransport(httpx.BaseTransport):
    """The scripted demo model as the gateway's transport. `plays` is read once, at the first call;
    `key_env` names the environment variable holding the key the gateway must send."""

    def __init__(self, plays: Callable[[], list[Play]], key_env: str) -> None:
        self._plays = plays
        self.key_env = key_env
        self.answered = 0

    @cached_property
    def plays(self) -> list[Play]:
        return self._plays()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        path = request.url.path
        dialect = dialects.dialect_of(path)
        if dialect is None or request.method != "POST":
            return _error(404, f"the scripted demo model has no route {request.method} {path}")
        expected = os.environ.get(self.key_env, "")
        if not expected or _credential(dialect, request) != expected:
            return _error(401, "the scripted demo model was not sent the demo's key")
        try:
            body = json.loads(request.content)
        except ValueError:
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body is not a JSON object")
        if dialect == "gemini":
            model, _, method = path.removeprefix("/v1beta/models/").partition(":")
            streamed = method == "streamGenerateContent"
        else:
            model, streamed = str(body.get("model", "")), body.get("stream") is True
        self.answered += 1
        index = self.answered
        turn = turn_for(dialect, body, self.plays, model, index)
        # Tokens as a model would count them, roughly: four bytes each.
        usage = (max(1, len(request.content) // 4), max(1, len(json.dumps(turn.text or "")) // 4 + 8 * len(turn.calls)))
        if not streamed:
            return httpx.Response(200, json=dialects.whole(dialect, turn, model=model, usage=usage, index=index))
        frames = b"".join(
            _frame(event) for event in dialects.events(dialect, turn, model=model, usage=usage, index=index)
        )
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=frames)
