"""A transcript's vocabulary: one step, and how much of an output a step keeps. Pure, and below
both the agents (`evaluation.agents.base` hands these on) and the readers of harness outputs."""

from __future__ import annotations

from dataclasses import dataclass

TAIL_CHARS = 4000


def output_tail(text: str | bytes | None, limit: int = TAIL_CHARS) -> str:
    """The end of an output: what usually explains a failure is at the bottom."""
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = text.replace("\x00", "")  # PostgreSQL text cannot hold NUL
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} characters cut ...]\n" + text[-limit:]


@dataclass(frozen=True)
class Step:
    """One transcript entry: a model message, a command and its result, or a harness note."""

    kind: str
    content: str = ""
    command: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    duration: float | None = None
