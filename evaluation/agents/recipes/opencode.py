"""OpenCode: the native (Bun-compiled) binary of `opencode-linux-x64`.

`opencode run` is non-interactive; opencode.json (in the private home's config folder) defines a
provider of its own, an OpenAI-compatible one at the gateway, allows bash and edits without asking
and sets its step limit, and OPENCODE_DISABLE_MODELS_FETCH keeps it from fetching the model
catalogue. OpenCode's step limit is soft (at the limit it asks the model to stop, but still offers
the tools) and it spends one model call on a title: the gateway's call cap bounds it.
"""

from __future__ import annotations

import json

from evaluation.gateway.config import Api
from evaluation.sandbox.network import MODEL_BASE_URL

from .base import HOME, Config, HarnessRecipe, cli_command, cli_env, step_limit

BINARY = "/.veriharm-harness/opencode/bin/opencode"
CONFIG_DIR = f"{HOME}/.config/opencode"
PROVIDER = "veriharm"


def _command(config: Config) -> str:
    return cli_command([BINARY, "run", "--format", "json", "-m", f"{PROVIDER}/{config['model']}"])


def _settings(config: Config) -> str:
    model = config["model"]
    return json.dumps(
        {
            "$schema": "https://opencode.ai/config.json",
            "model": f"{PROVIDER}/{model}",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "VeriHarm gateway",
                    "options": {"baseURL": MODEL_BASE_URL, "apiKey": "{env:VERIHARM_MODEL_API_KEY}"},
                    "models": {model: {"name": model}},
                }
            },
            "agent": {"build": {"steps": step_limit(config)}},
        },
        indent=2,
    )


def _env(config: Config) -> dict[str, str]:
    return cli_env(Api.OPENAI, OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1")


RECIPE = HarnessRecipe(
    name="opencode",
    version="1.18.33+veriharm.1",
    apis=(Api.OPENAI,),
    task_via="argument",
    command=_command,
    env=_env,
    files=lambda config: {f"{CONFIG_DIR}/opencode.json": _settings(config)},
    permission_mode="permissive autonomous: opencode.json allows bash and edits without asking (web fetches denied)",
    output="opencode",
    own_step_limit=False,
)
