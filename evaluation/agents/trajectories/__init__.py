"""Each coding-agent CLI's own machine-readable output read into transcript steps (pure: no Django,
no database, nothing of the agents above them; steps.py holds the Step they make).

One module per harness, each with `read(stdout, *, step_limit=None) -> HarnessTrajectory`:
claude_code (stream-json), codex (exec --json), opencode (run --format json), pi (--mode json),
gemini_cli (stream-json); common.py holds what they share. `READERS` finds one by the harness's
recipe name; `read_output` reads with it.
"""

from __future__ import annotations

from typing import Protocol

from . import claude_code, codex, gemini_cli, opencode, pi
from .common import HarnessTrajectory


class Reader(Protocol):
    def __call__(self, stdout: str, *, step_limit: int | None = None) -> HarnessTrajectory: ...


READERS: dict[str, Reader] = {
    claude_code.HARNESS: claude_code.read,
    codex.HARNESS: codex.read,
    opencode.HARNESS: opencode.read,
    pi.HARNESS: pi.read,
    gemini_cli.HARNESS: gemini_cli.read,
}


def read_output(harness: str, stdout: str, *, step_limit: int | None = None) -> HarnessTrajectory:
    """`harness`'s stdout as steps and its final state. `step_limit` is the turn/step limit the run
    was given (only OpenCode needs it: its own output does not say it reached it). KeyError for a
    harness with no reader."""
    return READERS[harness](stdout, step_limit=step_limit)


__all__ = ["READERS", "HarnessTrajectory", "read_output"]
