"""The answers the gateway gives itself, without asking the upstream (pure).

A harness asks a few things besides its model calls; the gateway answers each on purpose, in the
flavour's own shape, and forwards none of them (docs/harnesses.md):

* `HEAD /api/hello` (Claude Code's reachability probe): 200, no body.
* The model list (`GET /v1/models`, `GET /v1beta/models`): the trial's own model(s), the agent's
  model and those of its price table, the only ones its gateway would price.
* Token counting (`POST /v1/messages/count_tokens`, Gemini's `:countTokens`): the gateway's own
  estimate, every character of text in the request at ESTIMATE_CHARS_PER_TOKEN, the rule the gateway
  uses for a call the upstream sent no usage for. The harnesses ask to decide when to compact their
  context; an estimate serves that, where a refusal would make some of them stop or retry, and
  forwarding would let the sandbox spend upstream requests outside the budget's counting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .config import Api
from .routes import Local, Route
from .usage import estimate_tokens, text_chars


@dataclass(frozen=True)
class LocalAnswer:
    status: int
    content: bytes


def _json(status: int, payload: dict[str, Any]) -> LocalAnswer:
    return LocalAnswer(status, json.dumps(payload).encode())


def model_list(api: str, models: tuple[str, ...]) -> dict[str, Any]:
    if api == Api.ANTHROPIC:
        return {
            "data": [
                {"type": "model", "id": m, "display_name": m, "created_at": "1970-01-01T00:00:00Z"} for m in models
            ],
            "has_more": False,
            "first_id": models[0] if models else None,
            "last_id": models[-1] if models else None,
        }
    if api == Api.GEMINI:
        methods = ["generateContent", "streamGenerateContent", "countTokens"]
        return {
            "models": [{"name": f"models/{m}", "displayName": m, "supportedGenerationMethods": methods} for m in models]
        }
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "created": 0, "owned_by": "veriharm-gateway"} for m in models],
    }


def token_count(api: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The estimate, in the shape the flavour's count answers in."""
    tokens = estimate_tokens(text_chars(payload))
    return {"totalTokens": tokens} if api == Api.GEMINI else {"input_tokens": tokens}


def local_answer(api: str, route: Route, payload: dict[str, Any], models: tuple[str, ...]) -> LocalAnswer:
    if route.name == Local.HELLO:
        return LocalAnswer(200, b"")
    if route.name == Local.MODELS:
        return _json(200, model_list(api, models))
    if route.name == Local.COUNT_TOKENS:
        return _json(200, token_count(api, payload))
    raise ValueError(f"{route.name} is not answered by the gateway")
