"""Pi (`@mariozechner/pi-coding-agent`), a Node.js CLI run by the Node 22 its runtime pins.

Print mode with JSON lines (`-p --mode json`), --offline (no update check, no install telemetry).
models.json in its agent folder (the private home) defines a provider of its own at the gateway,
speaking chat completions; settings.json cuts its retries to one. Pi never asks before a tool runs,
and has no turn limit: the gateway's call cap and the time limit bound it. It exits 0 even when its
model failed throughout: its adapter reads the last message's stopReason. Its message_update lines
repeat the whole partial message at every streamed token; they are left out of its output.
"""

from __future__ import annotations

import json

from evaluation.gateway.config import Api
from evaluation.sandbox.network import MODEL_BASE_URL

from .base import HOME, Config, HarnessRecipe, cli_command, cli_env

RUNTIME = "/.veriharm-harness/pi"
AGENT_DIR = f"{HOME}/.pi/agent"
PROVIDER = "veriharm"


def _command(config: Config) -> str:
    argv = [
        f"{RUNTIME}/node/bin/node", f"{RUNTIME}/bin/pi", "--offline", "-p", "--mode", "json",
        "--provider", PROVIDER, "--model", config["model"],
    ]  # fmt: skip
    return cli_command(argv, drop_lines='"type":"message_update"')


def _models(config: Config) -> str:
    model = config["model"]
    return json.dumps(
        {
            "providers": {
                PROVIDER: {
                    "baseUrl": MODEL_BASE_URL,
                    "api": "openai-completions",
                    "apiKey": "VERIHARM_MODEL_API_KEY",
                    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                    "models": [
                        {
                            "id": model,
                            "name": model,
                            "reasoning": False,
                            "input": ["text"],
                            "contextWindow": 128000,
                            "maxTokens": 16384,
                            # The gateway prices every call; Pi's own figure would only mislead.
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        }
                    ],
                }
            }
        },
        indent=2,
    )


SETTINGS = json.dumps(
    {
        "enableInstallTelemetry": False,
        "retry": {"enabled": True, "maxRetries": 1, "baseDelayMs": 500, "provider": {"maxRetries": 0}},
    },
    indent=2,
)


def _env(config: Config) -> dict[str, str]:
    return cli_env(Api.OPENAI, PI_CODING_AGENT_DIR=AGENT_DIR, PI_OFFLINE="1")


RECIPE = HarnessRecipe(
    name="pi",
    version="0.73.1+veriharm.1",
    apis=(Api.OPENAI,),
    task_via="argument",
    command=_command,
    env=_env,
    files=lambda config: {f"{AGENT_DIR}/models.json": _models(config), f"{AGENT_DIR}/settings.json": SETTINGS},
    permission_mode="permissive autonomous: Pi has no permission prompts; every tool call runs",
    output="pi",
    own_step_limit=False,
)
