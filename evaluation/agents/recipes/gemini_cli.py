"""Gemini CLI (`@google/gemini-cli`), a Node.js CLI run by the Node 22 its runtime pins.

Non-interactive (-p) with stream-json output, every tool call approved (--yolo). settings.json (in
the private home) turns off auto-update, usage statistics and telemetry, picks API-key auth (so it
never starts a login), cuts its own attempts per call to two (ten by default) and sets its turn
limit; GEMINI_CLI_TRUST_WORKSPACE spares the trust prompt. It speaks the Gemini API
(`streamGenerateContent?alt=sse`, key in x-goog-api-key) to the gateway's origin. Its error reports
go to TMPDIR, the private scratch.
"""

from __future__ import annotations

import json

from evaluation.gateway.config import Api

from .base import HOME, Config, HarnessRecipe, cli_command, cli_env, step_limit

RUNTIME = "/.veriharm-harness/gemini-cli"


def _command(config: Config) -> str:
    argv = [
        f"{RUNTIME}/node/bin/node", f"{RUNTIME}/bin/gemini", "--yolo", "--output-format", "stream-json",
        "-m", config["model"],
    ]  # fmt: skip
    return cli_command(argv, task_flag="-p")


def _settings(config: Config) -> str:
    return json.dumps(
        {
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, "maxAttempts": 2},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "model": {"maxSessionTurns": step_limit(config)},
        },
        indent=2,
    )


def _env(config: Config) -> dict[str, str]:
    return cli_env(Api.GEMINI, GEMINI_CLI_TRUST_WORKSPACE="true")


RECIPE = HarnessRecipe(
    name="gemini-cli",
    version="0.61.0+veriharm.1",
    apis=(Api.GEMINI,),
    task_via="argument",
    command=_command,
    env=_env,
    files=lambda config: {f"{HOME}/.gemini/settings.json": _settings(config)},
    permission_mode="permissive autonomous: --yolo approves every tool call (shell, file edits) without asking",
    output="gemini-cli",
)
