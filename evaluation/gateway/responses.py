"""What the gateway answers: a ``GatewayResponse`` (whole, or a stream to drain), and a refusal
shaped as the calling API's own error so that the harness's SDK shows its message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .config import Api


@dataclass
class GatewayResponse:
    status: int
    headers: list[tuple[str, str]]
    # Whole answers and refusals carry `content`; streamed answers an iterator to drain (and close).
    content: bytes = b""
    stream: Iterator[bytes] | None = None

    def read(self) -> bytes:
        if self.stream is None:
            return self.content
        return b"".join(self.stream)

    def close(self) -> None:
        close = getattr(self.stream, "close", None)
        if close is not None:
            close()


# Google's error statuses by HTTP status, for Gemini-shaped refusals.
GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_response(api: str, status: int, kind: str, message: str, **extra_headers: str) -> GatewayResponse:
    """A refusal shaped as the flavour's own error, so the harness's SDK shows the message."""
    if api == Api.ANTHROPIC:
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    elif api == Api.GEMINI:
        fallback = "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"
        payload = {"error": {"code": status, "message": message, "status": GEMINI_STATUSES.get(status, fallback)}}
    else:
        payload = {"error": {"type": kind, "code": kind, "message": message}}
    headers = [("content-type", "application/json")] + list(extra_headers.items())
    return GatewayResponse(status, headers, json.dumps(payload).encode())
