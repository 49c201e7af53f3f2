"""The three API flavours a proposer or judge may speak: the request body for a conversation of
plain text messages, and the reply's text out of the answer (pure).

Only text goes either way (no tools, no streaming): a proposer's and a judge's whole answer is one
JSON object, validated by `replies`.
"""

from __future__ import annotations

from typing import Any

from .endpoints import Endpoint

Message = dict[str, str]  # {"role": "user" | "assistant", "content": text}


def request_body(endpoint: Endpoint, messages: list[Message]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": endpoint.model}
    if endpoint.route == "chat_completions":
        # max_completion_tokens, not the older max_tokens: OpenAI's reasoning models refuse the latter.
        body |= {"messages": messages, "max_completion_tokens": endpoint.max_tokens}
    elif endpoint.route == "responses":
        # Each turn is an easy input message; the conversation is resent whole, so nothing need be
        # stored upstream between the calls.
        body |= {"input": messages, "max_output_tokens": endpoint.max_tokens, "store": False}
    else:
        body |= {"messages": messages, "max_tokens": endpoint.max_tokens}
    if endpoint.temperature is not None:
        body["temperature"] = endpoint.temperature
    return body


class NoText(ValueError):
    """The answer holds no reply text; the message says what it holds instead."""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _joined(parts: Any, kind: str) -> str:
    return "".join(
        part["text"]
        for part in map(_dict, _list(parts))
        if part.get("type") == kind and isinstance(part.get("text"), str)
    )


def reply_text(route: str, answer: Any) -> str:
    """The text of a 200 answer; NoText when there is none (a refusal, an answer cut at its bound)."""
    if not isinstance(answer, dict):
        raise NoText("the answer is not a JSON object")
    refusal: Any = None
    if route == "chat_completions":
        choice = _dict((_list(answer.get("choices")) or [None])[0])
        message = _dict(choice.get("message"))
        content = message.get("content")
        text = content if isinstance(content, str) else _joined(content, "text")
        stop, refusal = choice.get("finish_reason"), message.get("refusal")
    elif route == "responses":
        items = [item for item in map(_dict, _list(answer.get("output"))) if item.get("type") == "message"]
        text = "".join(_joined(item.get("content"), "output_text") for item in items)
        stop = _dict(answer.get("incomplete_details")).get("reason") or answer.get("status")
        refusals = [
            part.get("refusal")
            for item in items
            for part in map(_dict, _list(item.get("content")))
            if part.get("type") == "refusal"
        ]
        refusal = refusals[0] if refusals else None
    else:
        text = _joined(answer.get("content"), "text")
        stop = answer.get("stop_reason")
    if text.strip():
        return text
    if refusal:
        raise NoText(f"the model refused: {str(refusal)[:200]}")
    raise NoText(f"the answer holds no text (stop reason {stop!r})")
