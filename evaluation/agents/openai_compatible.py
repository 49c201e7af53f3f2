"""A bash-tool loop against any OpenAI-compatible chat-completions endpoint.

The loop runs in the worker and talks to the model through the trial's model gateway
(`evaluation.gateway`), the same code a harness inside a sandbox goes through: the gateway adds
the key, counts tokens and cost, applies the run's budget and the endpoint's limits and retries.
Only the shell commands the model asks for run inside the sandbox, so the sandbox needs neither
network nor secrets.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaluation.gateway.config import UPSTREAM_KEYS, Api, Upstream, upstream_from_config
from evaluation.gateway.core import BudgetExhausted, Gateway

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

if TYPE_CHECKING:
    from evaluation.gateway.server import TrialGateway
    from evaluation.sandbox.base import Sandbox

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
CHAT_PATH = "/v1/chat/completions"
LOOP_KEYS = ("model", "max_steps", "temperature", "command_timeout", "system_prompt")


@dataclass(frozen=True)
class EndpointConfig:
    """The loop's settings and its upstream (base_url, api_key_env, prices, limits: `evaluation.gateway.config`)."""

    base_url: str
    model: str
    api_key_env: str = ""
    max_steps: int = 30
    temperature: float = 0.0
    command_timeout: float = 120.0
    request_timeout: float = 120.0
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    api: str = Api.OPENAI
    prices: dict[str, Any] = field(default_factory=dict, hash=False)
    max_concurrency: int | None = None
    requests_per_minute: int | None = None
    max_retries: int | None = None
    max_calls: int | None = None

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> EndpointConfig:
        unknown = sorted(set(config) - set(LOOP_KEYS) - set(UPSTREAM_KEYS))
        if unknown:
            raise ValueError(f"openai-compatible agent config has unknown field(s) {', '.join(unknown)}")
        missing = [key for key in ("base_url", "model") if not config.get(key)]
        if missing:
            raise ValueError(f"openai-compatible agent config lacks {', '.join(missing)}")
        values = dict(config)
        if not 1 <= int(values.get("max_steps", cls.max_steps)) <= 500:
            raise ValueError("max_steps must be between 1 and 500")
        # The loop speaks chat completions: its flavour is openai whether or not the config says so.
        upstream_from_config(values, default_api=Api.OPENAI)
        return cls(**values)

    def upstream(self) -> Upstream:
        return upstream_from_config({k: getattr(self, k) for k in UPSTREAM_KEYS}, default_api=Api.OPENAI)


class ChatClient:
    """POST /v1/chat/completions with the standard JSON body, through the model gateway."""

    def __init__(self, config: EndpointConfig, gateway: Gateway | TrialGateway | None = None) -> None:
        self.config = config
        self.gateway = gateway

    def _gateway(self) -> Gateway | TrialGateway:
        if self.gateway is None:
            # Without a trial's gateway (a loop tried out on its own) the calls go through the same
            # code, forwarded and retried alike, but counted against no trial.
            self.gateway = Gateway(self.config.upstream())
        return self.gateway

    def complete(self, messages: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
        payload = {
            "model": self.config.model,
            "messages": messages,
            "tools": [BASH_TOOL],
            "tool_choice": "auto",
            "temperature": self.config.temperature,
        }
        status, answer = self._gateway().post_json(CHAT_PATH, payload, timeout=max(timeout, 1.0))
        if status == 200 and isinstance(answer, dict):
            return _first_message(answer)
        error = answer.get("error") if isinstance(answer, dict) else None
        detail = (error.get("message") if isinstance(error, dict) else None) or str(answer)[:500]
        if status == 429 and isinstance(error, dict) and error.get("type") == "budget_exhausted":
            raise BudgetExhausted(detail)
        if status == 200:
            raise AgentError(f"{self.config.base_url} answered with something that is not JSON: {detail[:300]}")
        raise AgentError(f"chat completion failed: HTTP {status} from {self.config.base_url}: {detail[:500]}")


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
    def __init__(self, config: EndpointConfig, gateway: Gateway | TrialGateway | None = None) -> None:
        self.config = config
        self.client = ChatClient(config, gateway)

    def attach_gateway(self, gateway: TrialGateway) -> None:
        super().attach_gateway(gateway)
        self.client.gateway = gateway

    def run(
        self, sandbox: Sandbox, task: str, *, time_limit: float, record: StepSink, should_stop: StopCheck
    ) -> AgentOutcome:
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
            messages.append(
                {"role": "assistant", "content": content or None, **({"tool_calls": calls} if calls else {})}
            )
            if not calls:
                return AgentOutcome(exit_code=0, timed_out=False, duration=time.monotonic() - started, output=content)
            for call in calls:
                command = _command_of(call)
                if command is None:
                    result_text = 'error: call the bash tool with JSON arguments {"command": "..."}'
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
        return AgentOutcome(
            exit_code=1, timed_out=False, duration=time.monotonic() - started, output=last_output, hit_step_limit=True
        )

    def _timed_out(self, started: float, last_output: str, record: StepSink) -> AgentOutcome:
        record(Step(kind="note", content="time limit reached"))
        return AgentOutcome(exit_code=None, timed_out=True, duration=time.monotonic() - started, output=last_output)
