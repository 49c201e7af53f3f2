"""The harness agent: a named coding-agent CLI, installed ahead of time, run inside the sandbox.

A harness is a recipe (`recipes.RECIPES`, one module per harness): what
`scripts/build_sandbox_image.sh` installs into a read-only runtime (`scripts/harnesses/<name>/`), the
command line that runs it non-interactively, the configuration files that keep it offline, how the
task reaches it, which model API flavours it speaks and its own permission mode. A trial runs it in
network mode `model`: the runtime is mounted at HARNESS_MOUNT, and the harness reaches its model
only through the trial's gateway at MODEL_BASE_URL with a dummy key (`evaluation.sandbox.network`).
Nothing is installed at trial time. Its machine-readable output is read back into transcript steps
by its adapter (`evaluation.agents.trajectories`). docs/harnesses.md says how to add one.

Config: {"harness": name, "model": the model name the gateway's upstream knows, "gateway": upstream,
"step_limit": model calls (default 30), "command_timeout": seconds per command (default 120)}.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.gateway.config import upstream_from_config
from evaluation.sandbox.base import read_identity
from evaluation.sandbox.images import HARNESS_IDENTITY, require_harness

from . import trajectories
from .base import (
    AgentFailed,
    AgentOutcome,
    AgentRunner,
    Step,
    StepSink,
    StopCheck,
    combined_output,
    command_step,
    output_tail,
)
from .recipes import RECIPES, HarnessRecipe
from .recipes.base import DEFAULT_STEP_LIMIT, HARNESS_TMP, HOME, OUTPUT_DIR, TASK_FILE, step_limit

if TYPE_CHECKING:
    from evaluation.sandbox.base import Sandbox

CONFIG_KEYS = ("harness", "model", "gateway", "step_limit", "command_timeout")
MAX_STEP_LIMIT = 500

__all__ = ["DEFAULT_STEP_LIMIT", "RECIPES", "HarnessAgent", "HarnessRecipe", "harness_pin", "validate_harness_config"]


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
    if not isinstance(model, str) or not model.strip() or any(c.isspace() or c in "\"'\\" for c in model):
        raise ValueError("a harness agent needs model: the model name its upstream serves (no spaces or quotes)")
    if not isinstance(config.get("gateway"), dict):
        raise ValueError("a harness agent needs gateway: its model upstream (api, base_url, api_key_env, ...)")
    try:
        upstream = upstream_from_config(config["gateway"])
    except ValueError as exc:
        raise ValueError(f"gateway: {exc}") from None
    if upstream.api not in recipe.apis:
        raise ValueError(
            f"gateway: {recipe.name} speaks the {', '.join(recipe.apis)} API, not {upstream.api!r}; "
            "give it an upstream of that API"
        )
    _bounded(config, "step_limit", 1, MAX_STEP_LIMIT)
    _bounded(config, "command_timeout", 1, 3600)
    return recipe


def harness_pin(config: dict[str, Any]) -> dict[str, str]:
    """What a trial records of the harness at launch (the runtime's identity is the worker's: it is
    recorded with the system the trial ran on)."""
    recipe = validate_harness_config(config)
    return {
        "name": recipe.name,
        "version": recipe.version,
        "task_via": recipe.task_via,
        "permission_mode": recipe.permission_mode,
    }


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
        # The private home and scratch first, then the recipe's configuration files into them.
        sandbox.exec(f"mkdir -p {OUTPUT_DIR} {HOME} {HARNESS_TMP}", timeout=30)
        for path, text in self.recipe.files(self.config).items():
            sandbox.exec(f"mkdir -p {shlex.quote(str(Path(path).parent))}", timeout=30)
            sandbox.write_file(path, text.encode(), mode=0o644)
        command = f"cd {shlex.quote(sandbox.workdir)} && {self.recipe.command(self.config)}"
        result = sandbox.exec(command, timeout=time_limit, env=self.recipe.env(self.config))
        stdout = result.stdout.decode("utf-8", "replace") if isinstance(result.stdout, bytes) else result.stdout
        shown_output = output_tail(combined_output("" if self.recipe.output else stdout, result.stderr))
        record(command_step(command, result, shown_output))
        outcome = AgentOutcome(
            exit_code=result.exit_code, timed_out=result.timed_out, duration=result.duration, output=shown_output
        )
        if self.recipe.output is not None:
            return self._read_output(stdout or "", outcome, record)
        if self._trajectory(sandbox, record) == "LimitsExceeded":
            return AgentOutcome(
                exit_code=1 if outcome.exit_code == 0 else outcome.exit_code,
                timed_out=outcome.timed_out,
                duration=outcome.duration,
                output=outcome.output,
                hit_step_limit=True,
            )
        return outcome

    def _read_output(self, stdout: str, outcome: AgentOutcome, record: StepSink) -> AgentOutcome:
        """The harness's own account of its run, read from its stdout into steps. Its final state and its
        exit status decide how the agent ended: by itself, at its own turn limit (the tests still run,
        as for any agent stopped at its limit), or in error (no verdict: the trial ends as an agent
        error, with the harness's reason)."""
        trajectory = trajectories.read_output(self.recipe.output or "", stdout, step_limit=step_limit(self.config))
        for step in trajectory.steps:
            record(step)
        # What the agent said last, as for the app's own loop (V3AST reads a refusal from it).
        said = next(
            (step.content for step in reversed(trajectory.steps) if step.kind == "message" and step.content), ""
        )
        if outcome.timed_out:
            return replace(outcome, output=said or outcome.output)
        if trajectory.hit_turn_limit:
            return replace(outcome, exit_code=outcome.exit_code or 1, output=said, hit_step_limit=True)
        error = trajectory.agent_error(outcome.exit_code)
        if error:
            raise AgentFailed(f"{self.recipe.name}: {error}")
        return replace(outcome, output=said)

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
