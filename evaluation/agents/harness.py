"""The harness agent: a named coding-agent CLI, installed ahead of time, run inside the sandbox.

A harness is a recipe (`RECIPES`): what `scripts/build_sandbox_image.sh` installs into a read-only
runtime (`scripts/harnesses/<name>/`), the command line that runs it non-interactively, how the task
reaches it and which model API flavours it speaks. A trial runs it in network mode `model`: the
runtime is mounted at HARNESS_MOUNT, and the harness reaches its model only through the trial's
gateway at MODEL_BASE_URL with a dummy key (`evaluation.sandbox.network`). Nothing is installed at
trial time. docs/harnesses.md says how to add one.

Config: {"harness": name, "model": the model name the gateway's upstream knows, "gateway": upstream,
"step_limit": model calls (default 30), "command_timeout": seconds per command (default 120)}.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.gateway.config import Api, upstream_from_config
from evaluation.sandbox.base import read_identity
from evaluation.sandbox.images import HARNESS_IDENTITY, require_harness
from evaluation.sandbox.network import HARNESS_MOUNT, harness_env

from .base import AgentOutcome, AgentRunner, Step, StepSink, StopCheck, run_single_command

if TYPE_CHECKING:
    from evaluation.sandbox.base import Sandbox

CONFIG_KEYS = ("harness", "model", "gateway", "step_limit", "command_timeout")
MAX_STEP_LIMIT = 500
DEFAULT_STEP_LIMIT = 30
# Outside the workdir: the harness's own files are no part of what the task asked for.
TASK_FILE = "/tmp/veriharm-task.md"
OUTPUT_DIR = "/tmp/veriharm-harness"


@dataclass(frozen=True)
class HarnessRecipe:
    name: str
    # The recipe's version: the harness's own release and the revision of how it is run here.
    version: str
    apis: tuple[str, ...]
    # How the task reaches the harness: "file", "argument" or "env" (for the docs and the record).
    task_via: str
    command: Callable[[dict[str, Any]], str]
    env: Callable[[dict[str, Any]], dict[str, str]]
    # Where the harness leaves its trajectory, read back into the transcript when it is there.
    trajectory: str | None = None

    @property
    def runtime(self) -> str:
        return f"{HARNESS_MOUNT}/{self.name}"


# mini-swe-agent's own CLI (minisweagent.run.mini): yolo mode (-y, no confirmations), exits when the
# model submits (--exit-immediately), the bundled mini.yaml with the step limit, no cost limit of
# its own (the gateway counts cost and enforces the run's budget), the task as the -t argument read
# from the task file. The runtime is a pip --target directory for the system's python3, put on
# sys.path by the -c bootstrap; -I -S keep the sandbox's PYTHON* variables and writable site
# directories out of the harness (the commands it runs still see the normal system).
_MINI_BOOT = (
    "import sys; sys.path.insert(0, '{lib}'); sys.argv[0] = 'mini'; from minisweagent.run.mini import app; app()"
)
_MINI_TRAJECTORY = f"{OUTPUT_DIR}/mini-swe-agent.traj.json"


def _mini_command(config: dict[str, Any]) -> str:
    boot = _MINI_BOOT.format(lib=f"{HARNESS_MOUNT}/mini-swe-agent/lib")
    argv = [
        "/usr/bin/python3", "-I", "-S", "-c", boot, "--yolo", "--exit-immediately",
        "--model", f"openai/{config['model']}", "--config", "mini.yaml",
        "--config", f"agent.step_limit={int(config.get('step_limit', DEFAULT_STEP_LIMIT))}",
        "--config", "agent.cost_limit=0",
        "--config", f"environment.timeout={int(config.get('command_timeout', 120))}",
        "--output", _MINI_TRAJECTORY,
    ]  # fmt: skip
    return f'{shlex.join(argv)} --task "$(cat {TASK_FILE})"'


def _mini_env(config: dict[str, Any]) -> dict[str, str]:
    return {
        **harness_env(Api.OPENAI),
        "MSWEA_CONFIGURED": "true",  # no first-run setup prompt
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_GLOBAL_CONFIG_DIR": f"{OUTPUT_DIR}/config",
        "MSWEA_COST_TRACKING": "ignore_errors",  # the gateway prices calls; litellm need not know the model
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of litellm's price list at import
        "TERM": "dumb",
    }


RECIPES: dict[str, HarnessRecipe] = {
    "mini-swe-agent": HarnessRecipe(
        name="mini-swe-agent",
        version="2.4.6+veriharm.1",
        apis=(Api.OPENAI,),
        task_via="argument",
        command=_mini_command,
        env=_mini_env,
        trajectory=_MINI_TRAJECTORY,
    ),
}


def _bounded(config: dict[str, Any], key: str, low: int, high: int) -> None:
    value = config.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"a harness agent's {key} must be a whole number between {low} and {high}")


def validate_harness_config(config: dict[str, Any]) -> HarnessRecipe:
    """The recipe the configuration names; ValueError naming what is wrong."""
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ValueError(
            f"a harness agent's config has unknown field(s) {', '.join(unknown)}; it takes {', '.join(CONFIG_KEYS)}"
        )
    recipe = RECIPES.get(config.get("harness"))  # type: ignore[arg-type]
    if recipe is None:
        raise ValueError(f"harness must be one of {', '.join(sorted(RECIPES))}, got {config.get('harness')!r}")
    model = config.get("model")
    if not isinstance(model, str) or not model.strip() or any(c.isspace() for c in model):
        raise ValueError("a harness agent needs model: the model name its upstream serves (no spaces)")
    if not isinstance(config.get("gateway"), dict):
        raise ValueError("a harness agent needs gateway: its model upstream (api, base_url, api_key_env, ...)")
    try:
        upstream = upstream_from_config(config["gateway"])
    except ValueError as exc:
        raise ValueError(f"gateway: {exc}") from None
    if upstream.api not in recipe.apis:
        raise ValueError(f"gateway: {recipe.name} speaks the {', '.join(recipe.apis)} API, not {upstream.api!r}")
    _bounded(config, "step_limit", 1, MAX_STEP_LIMIT)
    _bounded(config, "command_timeout", 1, 3600)
    return recipe


def harness_pin(config: dict[str, Any]) -> dict[str, str]:
    """What a trial records of the harness at launch (the runtime's identity is the worker's: it is
    recorded with the system the trial ran on)."""
    recipe = validate_harness_config(config)
    return {"name": recipe.name, "version": recipe.version, "task_via": recipe.task_via}


class HarnessAgent(AgentRunner):
    network = "model"

    def __init__(self, config: dict[str, Any]) -> None:
        self.recipe = validate_harness_config(config)
        self.config = dict(config)

    def harness_root(self) -> Path:
        return require_harness(self.recipe.name)

    def identity(self) -> str:
        """The runtime this trial runs, for the record of what system it ran on."""
        runtime = require_harness(self.recipe.name) / self.recipe.name
        return (
            f"harness {self.recipe.name} {self.recipe.version} {read_identity(runtime / HARNESS_IDENTITY, 'harness')}"
        )

    def run(
        self, sandbox: Sandbox, task: str, *, time_limit: float, record: StepSink, should_stop: StopCheck
    ) -> AgentOutcome:
        sandbox.write_file(TASK_FILE, task.encode(), mode=0o644)
        command = f"mkdir -p {OUTPUT_DIR} && cd {shlex.quote(sandbox.workdir)} && {self.recipe.command(self.config)}"
        outcome = run_single_command(
            sandbox, command, shown=command, time_limit=time_limit, record=record, env=self.recipe.env(self.config)
        )
        status = self._trajectory(sandbox, record)
        if status == "LimitsExceeded":
            return AgentOutcome(
                exit_code=1 if outcome.exit_code == 0 else outcome.exit_code,
                timed_out=outcome.timed_out,
                duration=outcome.duration,
                output=outcome.output,
                hit_step_limit=True,
            )
        return outcome

    def _trajectory(self, sandbox: Sandbox, record: StepSink) -> str:
        """The harness's own account, added to the transcript: its commands and exit status. It lies
        in the sandbox, so it is what the agent left there, shown as such and never scored."""
        if self.recipe.trajectory is None:
            return ""
        try:
            data = json.loads(sandbox.read_file(self.recipe.trajectory))
        except Exception:  # noqa: BLE001 - the agent's file: missing, unreadable or not JSON
            return ""
        if not isinstance(data, dict):
            return ""
        commands = []
        for message in data.get("messages") or []:
            actions = ((message or {}).get("extra") or {}).get("actions") if isinstance(message, dict) else None
            for action in actions or []:
                if isinstance(action, dict) and isinstance(action.get("command"), str):
                    commands.append(action["command"])
        info = data.get("info")
        if not isinstance(info, dict):
            info = {}
        status = str(info.get("exit_status") or "")
        record(
            Step(
                kind="note",
                content=f"{self.recipe.name} trajectory (as left in the sandbox): exit status "
                f"{status or 'unknown'}; commands: " + "; ".join(c[:200] for c in commands)[:4000],
            )
        )
        return status
