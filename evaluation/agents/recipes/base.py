"""What a harness recipe is, and what every recipe of a CLI shares (pure: no database, no sandbox).

A recipe says how one harness, installed ahead of time in its read-only runtime
(`scripts/harnesses/<name>/`, mounted at HARNESS_MOUNT/<name>), is run non-interactively in a
sandbox: its command line, its environment, the configuration files it needs to stay offline
(written into the sandbox's own scratch before it starts), which model API flavours it speaks, its
own permission mode, and how its machine-readable output is read back into transcript steps.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluation.sandbox.network import HARNESS_MOUNT, harness_env

# Outside the workdir: the harness's own files are no part of what the task asked for.
TASK_FILE = "/tmp/veriharm-task.md"
OUTPUT_DIR = "/tmp/veriharm-harness"
# The harness's private home, configuration and temporary files: the sandbox's own scratch, made
# anew for every trial, so nothing of the host's or of an earlier trial's configuration reaches it.
HOME = f"{OUTPUT_DIR}/home"
HARNESS_TMP = f"{OUTPUT_DIR}/tmp"

Config = dict[str, Any]


@dataclass(frozen=True)
class HarnessRecipe:
    name: str
    # The recipe's version: the harness's own release and the revision of how it is run here.
    version: str
    apis: tuple[str, ...]
    # How the task reaches the harness: "file", "argument" or "env" (for the docs and the record).
    task_via: str
    command: Callable[[Config], str]
    env: Callable[[Config], dict[str, str]]
    # The harness's own permission mode, as V3AST reports it: what it may do without asking.
    permission_mode: str
    # Files written into the sandbox before it starts (path -> text): its offline configuration.
    files: Callable[[Config], dict[str, str]] = field(default=lambda config: {})
    # Where the harness leaves its trajectory file, read back into the transcript when it is there.
    trajectory: str | None = None
    # The adapter (`evaluation.agents.trajectories`) that reads its stdout into steps, if any.
    output: str | None = None
    # Whether the harness bounds its own model calls by `step_limit` (else only the gateway's call
    # cap and the time limit do).
    own_step_limit: bool = True

    @property
    def runtime(self) -> str:
        return f"{HARNESS_MOUNT}/{self.name}"


# Model calls (turns) a harness may make unless its agent says otherwise.
DEFAULT_STEP_LIMIT = 30


def step_limit(config: Config) -> int:
    return int(config.get("step_limit", DEFAULT_STEP_LIMIT))


def command_timeout(config: Config) -> int:
    return int(config.get("command_timeout", 120))


def cli_command(argv: list[str], *, task_flag: str | None = "", drop_lines: str = "") -> str:
    """A CLI's command line: its argv with the task as its last argument (read from the task file;
    behind `task_flag` when the CLI takes it so; None: not an argument at all) and stdin from
    /dev/null (every CLI waits on an open pipe). Its stdout, what the adapter reads, is the exec's
    own, not a file in the sandbox. `drop_lines`: a fixed string whose lines are left out of it
    (a CLI that repeats the whole partial message at every streamed token would fill the exec's
    output bound long before its last, most telling line); the CLI's own exit status is kept."""
    line = shlex.join(argv)
    if task_flag is not None:
        task = f'"$(cat {TASK_FILE})"'
        line += f" {shlex.quote(task_flag)} {task}" if task_flag else f" {task}"
    line += " </dev/null"
    if drop_lines:
        line += f" | grep --line-buffered -vF {shlex.quote(drop_lines)}; exit ${{PIPESTATUS[0]}}"
    return line


def cli_env(api: str, **extra: str) -> dict[str, str]:
    """The gateway's base URL and dummy key in the names the SDKs read, and a private home: every
    configuration, cache and state directory of the CLI under the sandbox's scratch."""
    return {
        **harness_env(api),
        "HOME": HOME,
        "XDG_CONFIG_HOME": f"{HOME}/.config",
        "XDG_CACHE_HOME": f"{HOME}/.cache",
        "XDG_DATA_HOME": f"{HOME}/.local/share",
        "XDG_STATE_HOME": f"{HOME}/.local/state",
        "TMPDIR": HARNESS_TMP,
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
        **extra,
    }
