"""A bash-tool loop against any OpenAI-compatible chat-completions endpoint.

The loop runs in the worker: it holds the API key and talks to the model, and
only the shell commands the model asks for run inside the sandbox, so the
sandbox needs neither network nor secrets.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from .base import (
    AgentError,
    AgentOutcome,
    AgentRunner,
    AgentStopped,
    Step,
    StepSink,
    StopCheck,
    combined_output,
    command_step,
    output_tail,
)

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in a Linux shell. Use the bash tool to run commands; "
    "each call runs in a fresh shell in the working directory, so no background process survives it. "
    "When the task is done, reply with a short summary and no tool call."
)
BASH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a bash command in the working directory and return its exit code and output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run"}},
            "required": ["command"],
        },
    },
}
# What the model is shown of one command's output; the transcript keeps the same tail.
TOOL_RESULT_CHARS = 8000
# Transient endpoint failures (connection refused, 429, 5xx) are retried this often per request.
REQUEST_RETRIES = 3


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key_env: str = ""
    max_steps: int = 30
    temperature: float = 0.0
    command_timeout: float = 120.0
    request_timeout: float = 120.0
    system_prompt: str = DEFAULT_SYSTEM_PROMPT

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> EndpointConfig:
        missing = [key for key in ("base_url", "model") if not config.get(key)]
        if missing:
            raise ValueError(f"openai-compatible agent config lacks {', '.join(missing)}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"openai-compatible agent config has unknown field(s) {', '.join(unknown)}")
        values = dict(config)
        if not 1 <= int(values.get("max_steps", cls.max_steps)) <= 500:
            raise ValueError("max_steps must be between 1 and 500")
        return cls(**values)

    def api_key(self) -> str:
        if not self.api_key_env:
            return ""
        key = os.environ.get(self.api_key_env)
        if not key:
            raise AgentError(f"environment variable {self.api_key_env} (the API key) is not set in the worker")
        return key


class ChatClient:
    """POST {base_url}/chat/completions with the standard JSON body."""

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"

    def complete(self, messages: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
        body = json.dumps(
            {
                "model": self.config.model,
                "messages": messages,
                "tools": [BASH_TOOL],
                "tool_choice": "auto",
                "temperature": self.config.temperature,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        key = self.config.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last_error = ""
        for attempt in range(REQUEST_RETRIES):
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=max(timeout, 1.0)) as response:
                    payload = json.loads(response.read().decode("utf-8"))
                return _first_message(payload)
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:500]
                last_error = f"HTTP {exc.code} from {self.url}: {detail}"
                if exc.code != 429 and exc.code < 500:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last_error = f"{self.url}: {exc}"
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                last_error = f"{self.url} answered with something that is not JSON: {exc}"
                break
            time.sleep(min(2**attempt, 5))
        raise AgentError(f"chat completion failed: {last_error}")


def _first_message(payload: dict[str, Any]) -> dict[str, Any]:
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise AgentError(f"the chat completion has no choices[0].message: {str(payload)[:300]}") from None
    if not isinstance(message, dict):
        raise AgentError("choices[0].message is not an object")
    return message


def _command_of(call: dict[str, Any]) -> str | None:
    function = call.get("function") or {}
    if function.get("name") != "bash":
        return None
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError:
        return None
    command = arguments.get("command") if isinstance(arguments, dict) else None
    return command if isinstance(command, str) and command.strip() else None


class OpenAICompatibleAgent(AgentRunner):
    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.client = ChatClient(config)

    def run(self, sandbox, task: str, *, time_limit: float, record: StepSink, should_stop: StopCheck) -> AgentOutcome:
        started = time.monotonic()
        deadline = started + time_limit
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.config.system_prompt},
            {"role": "user", "content": task},
        ]
        last_output = ""
        for _ in range(self.config.max_steps):
            if should_stop():
                raise AgentStopped()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return self._timed_out(started, last_output, record)
            message = self.client.complete(messages, timeout=min(remaining, self.config.request_timeout))
            calls = message.get("tool_calls") or []
            content = message.get("content") or ""
            record(Step(kind="message", content=content, command="\n".join(_command_of(c) or "" for c in calls)))
            # Sent back as received (role, content, tool_calls) so the endpoint sees a valid history.
            messages.append({"role": "assistant", "content": content or None, **({"tool_calls": calls} if calls else {})})
            if not calls:
                return AgentOutcome(exit_code=0, timed_out=False, duration=time.monotonic() - started, output=content)
            for call in calls:
                command = _command_of(call)
                if command is None:
                    result_text = "error: call the bash tool with JSON arguments {\"command\": \"...\"}"
                    record(Step(kind="note", content=result_text))
                else:
                    if should_stop():
                        raise AgentStopped()
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return self._timed_out(started, last_output, record)
                    result = sandbox.exec(command, timeout=min(remaining, self.config.command_timeout))
                    output = output_tail(combined_output(result.stdout, result.stderr), TOOL_RESULT_CHARS)
                    status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
                    result_text = f"[{status}]\n{output}"
                    last_output = output
                    record(command_step(command, result, output))
                messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result_text})
        record(Step(kind="note", content=f"step limit of {self.config.max_steps} model calls reached"))
        # Not done by its own account: a distinct non-zero status, unlike a timeout (None).
        return AgentOutcome(exit_code=1, timed_out=False, duration=time.monotonic() - started, output=last_output,
                            hit_step_limit=True)

    def _timed_out(self, started: float, last_output: str, record: StepSink) -> AgentOutcome:
        record(Step(kind="note", content="time limit reached"))
        return AgentOutcome(exit_code=None, timed_out=True, duration=time.monotonic() - started, output=last_output)
