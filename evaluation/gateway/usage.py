"""Token counts read from an upstream's answer, whole or streamed as server-sent events (pure).

OpenAI chat completions: `usage.prompt_tokens` / `completion_tokens`; streamed, in the last chunk
when the request asked for `stream_options.include_usage` (the gateway asks for it).
OpenAI responses: `usage.input_tokens` / `output_tokens`; streamed, in the `response.completed`
event's `response.usage`.
Anthropic messages: `usage.input_tokens` (+ cache creation and cache reads, billed as input) /
`output_tokens`; streamed, input in `message_start`'s `message.usage`, output in `message_delta`'s
`usage` (a running total: the last one counts).
Gemini generateContent: `usageMetadata.promptTokenCount` (+ `toolUsePromptTokenCount`) /
`candidatesTokenCount` + `thoughtsTokenCount` (thinking is billed as output); streamed
(streamGenerateContent?alt=sse), each chunk may carry `usageMetadata` with the figures so far: the
last one counts, and it is final once a chunk carrying it also ends its candidate (`finishReason`).

`complete` says the answer carried its final usage; without it the gateway estimates the call
(`estimate_tokens`, from what it passed on) and marks the record as estimated.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

# The usual rule of thumb for English text and code with the OpenAI and Anthropic tokenizers.
ESTIMATE_CHARS_PER_TOKEN = 4


def estimate_tokens(chars: int) -> int:
    return math.ceil(max(chars, 0) / ESTIMATE_CHARS_PER_TOKEN)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    # Whether the answer said anything about usage at all (a call without it is recorded as such).
    reported: bool = False
    # Whether it carried the final figures (a stream cut before its last usage event did not).
    complete: bool = False


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _from_usage(usage: Any, into: Usage, *, final_output: bool = True) -> None:
    if not isinstance(usage, dict):
        return
    into.reported = True
    if "promptTokenCount" in usage or "candidatesTokenCount" in usage:  # Gemini's usageMetadata
        into.input_tokens = _int(usage.get("promptTokenCount")) + _int(usage.get("toolUsePromptTokenCount"))
        into.output_tokens = _int(usage.get("candidatesTokenCount")) + _int(usage.get("thoughtsTokenCount"))
        return
    if "prompt_tokens" in usage or "completion_tokens" in usage:  # chat completions
        into.input_tokens = _int(usage.get("prompt_tokens"))
        into.output_tokens = _int(usage.get("completion_tokens"))
        return
    inputs = sum(_int(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    if inputs:
        into.input_tokens = inputs
    if "output_tokens" in usage and final_output:
        into.output_tokens = _int(usage.get("output_tokens"))


def from_body(body: bytes) -> Usage:
    """Usage of a whole JSON answer (any of the four APIs)."""
    usage = Usage()
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return usage
    if isinstance(payload, dict):
        _from_usage(payload.get("usage", payload.get("usageMetadata")), usage)
        usage.complete = usage.reported
    return usage


def _finished(payload: dict[str, Any]) -> bool:
    """A Gemini chunk that ends its answer (a candidate with its finishReason)."""
    candidates = payload.get("candidates")
    return isinstance(candidates, list) and any(isinstance(c, dict) and c.get("finishReason") for c in candidates)


def text_chars(value: Any) -> int:
    """Characters of text in an event's delta (content, tool arguments, reasoning), at any depth."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(text_chars(v) for v in value.values())
    if isinstance(value, list):
        return sum(text_chars(v) for v in value)
    return 0


class StreamUsage:
    """Reads server-sent events as they pass and keeps the usage they report."""

    def __init__(self) -> None:
        self.usage = Usage()
        # Characters of answer text seen in the events' deltas: the output estimate of a cut stream.
        self.text_chars = 0
        self._buffer = b""

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        # Events end with a blank line; lines may end with \n or \r\n.
        self._buffer = self._buffer.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            self._event(event)

    def close(self) -> Usage:
        if self._buffer.strip():
            self._event(self._buffer)
            self._buffer = b""
        return self.usage

    def _event(self, raw: bytes) -> None:
        data = b"\n".join(line[5:].lstrip() for line in raw.split(b"\n") if line.startswith(b"data:"))
        if not data or data.strip() == b"[DONE]":
            return
        try:
            payload = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return
        if not isinstance(payload, dict):
            return
        self.text_chars += text_chars(payload.get("delta"))
        for choice in payload.get("choices") or []:
            if isinstance(choice, dict):
                self.text_chars += text_chars(choice.get("delta"))
        for candidate in payload.get("candidates") or []:  # Gemini: each chunk's new parts
            if isinstance(candidate, dict):
                self.text_chars += text_chars(candidate.get("content"))
        kind = payload.get("type")
        if kind == "message_start":  # Anthropic: input counted here, output so far
            _from_usage((payload.get("message") or {}).get("usage"), self.usage)
        elif kind == "message_delta":  # Anthropic: the running output total
            _from_usage(payload.get("usage"), self.usage)
            self.usage.complete = self.usage.complete or isinstance(payload.get("usage"), dict)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):  # OpenAI responses
            _from_usage((payload.get("response") or {}).get("usage"), self.usage)
            self.usage.complete = self.usage.reported
        elif payload.get("usage"):  # OpenAI chat completions' last chunk
            _from_usage(payload["usage"], self.usage)
            self.usage.complete = self.usage.reported
        elif isinstance(payload.get("usageMetadata"), dict):  # Gemini: the figures so far
            _from_usage(payload["usageMetadata"], self.usage)
            self.usage.complete = self.usage.complete or _finished(payload)
