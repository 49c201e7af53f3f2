"""mini-swe-agent's own CLI (minisweagent.run.mini), a Python harness.

Yolo mode (no confirmations), exits when the model submits (--exit-immediately), the bundled
mini.yaml with the step limit, no cost limit of its own (the gateway counts cost and enforces the
run's budget), the task as the -t argument read from the task file. The runtime is a pip --target
directory for the system's python3, put on sys.path by the -c bootstrap; -I -S keep the sandbox's
PYTHON* variables and writable site directories out of the harness (the commands it runs still see
the normal system).
"""

from __future__ import annotations

import shlex

from evaluation.gateway.config import Api
from evaluation.sandbox.network import HARNESS_MOUNT, harness_env

from .base import OUTPUT_DIR, TASK_FILE, Config, HarnessRecipe, command_timeout, step_limit

_BOOT = "import sys; sys.path.insert(0, '{lib}'); sys.argv[0] = 'mini'; from minisweagent.run.mini import app; app()"
TRAJECTORY = f"{OUTPUT_DIR}/mini-swe-agent.traj.json"


def _command(config: Config) -> str:
    boot = _BOOT.format(lib=f"{HARNESS_MOUNT}/mini-swe-agent/lib")
    argv = [
        "/usr/bin/python3", "-I", "-S", "-c", boot, "--yolo", "--exit-immediately",
        "--model", f"openai/{config['model']}", "--config", "mini.yaml",
        "--config", f"agent.step_limit={step_limit(config)}",
        "--config", "agent.cost_limit=0",
        "--config", f"environment.timeout={command_timeout(config)}",
        "--output", TRAJECTORY,
    ]  # fmt: skip
    return f'{shlex.join(argv)} --task "$(cat {TASK_FILE})"'


def _env(config: Config) -> dict[str, str]:
    return {
        **harness_env(Api.OPENAI),
        "MSWEA_CONFIGURED": "true",  # no first-run setup prompt
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_GLOBAL_CONFIG_DIR": f"{OUTPUT_DIR}/config",
        "MSWEA_COST_TRACKING": "ignore_errors",  # the gateway prices calls; litellm need not know the model
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of litellm's price list at import
        "TERM": "dumb",
    }


RECIPE = HarnessRecipe(
    name="mini-swe-agent",
    version="2.4.6+veriharm.1",
    apis=(Api.OPENAI,),
    task_via="argument",
    command=_command,
    env=_env,
    permission_mode="permissive autonomous: --yolo runs every command the model asks for without confirmation",
    trajectory=TRAJECTORY,
)
