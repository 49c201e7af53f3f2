"""A rollout's steps as the text a proposer reads (tau), bounded (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from evaluation.agents.base import Step, output_tail

# A proposer's prompt holds every earlier attempt's transcript: each is kept to its last part.
TRANSCRIPT_CHARS = 6000


def step_dicts(steps: Iterable[Step]) -> list[dict[str, Any]]:
    return [asdict(step) for step in steps]


def render(steps: Iterable[dict[str, Any]], limit: int = TRANSCRIPT_CHARS) -> str:
    parts = []
    for step in steps:
        if step.get("command"):
            status = "timed out" if step.get("timed_out") else f"exit {step.get('exit_code')}"
            parts.append(f"$ {step['command']}\n{step.get('content', '')}\n[{status}]")
        else:
            parts.append(f"[{step.get('kind', '')}] {step.get('content', '')}")
    return output_tail("\n".join(parts), limit)
