"""The real key never leaves the gateway: scrubbed from answers (whole, streamed across chunks, in
the response headers passed back) and from the error excerpts it records."""

from __future__ import annotations

import httpx

# Response headers passed back, and only after the key is scrubbed from their values; the body is
# re-framed by whoever sends it (length or chunks).
FORWARDED_RESPONSE_HEADERS = frozenset({"content-type", "retry-after", "x-request-id", "request-id"})
KEY_REMOVED = "[key removed by the gateway]"
ERROR_EXCERPT = 300


class KeyScrubber:
    """Replaces the real key wherever it shows in an answer (an upstream echoing it in an error),
    holding back the last len(key) - 1 bytes of each chunk in case the key straddles two chunks."""

    def __init__(self, key: str) -> None:
        self.key = key.encode()
        self._tail = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self.key:
            return chunk
        data = scrub(self._tail + chunk, self.key)
        keep = len(self.key) - 1
        if len(data) <= keep:
            self._tail = data
            return b""
        self._tail = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep]

    def flush(self) -> bytes:
        tail, self._tail = self._tail, b""
        return tail


def scrub(data: bytes, key: bytes) -> bytes:
    return data.replace(key, KEY_REMOVED.encode()) if key else data


def excerpt(data: bytes, key: bytes) -> str:
    """The start of an error body for the record: scrubbed whole first, so no cut can leave part of the key."""
    return scrub(data, key).decode("utf-8", "replace")[:ERROR_EXCERPT]


def scrubbed_headers(response: httpx.Response, key: bytes) -> list[tuple[str, str]]:
    """The response headers passed back (``FORWARDED_RESPONSE_HEADERS``), the key removed from their values."""
    text = key.decode("latin-1")
    return [
        (name, value.replace(text, KEY_REMOVED) if text else value)
        for name, value in response.headers.items()
        if name.lower() in FORWARDED_RESPONSE_HEADERS
    ]
