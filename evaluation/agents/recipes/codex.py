"""Codex, OpenAI's CLI: the native binary of `@openai/codex` (its linux-x64 package).

`codex exec` is non-interactive; with approvals and its own sandbox bypassed (the VeriHarm sandbox
is the sandbox) it runs every command the model asks for. It ignores OPENAI_BASE_URL and its
built-in provider tries WebSockets to the vendor, so config.toml defines a provider of its own that
speaks the responses API to the gateway, with update checks, analytics, feedback and plugins off and
its own retries cut to one. Codex has no turn limit: the gateway's call cap and the time limit bound it.
"""

from __future__ import annotations

import json

from evaluation.gateway.config import Api
from evaluation.sandbox.network import MODEL_BASE_URL

from .base import HOME, Config, HarnessRecipe, cli_command, cli_env

BINARY = "/.veriharm-harness/codex/bin/codex"
CODEX_HOME = f"{HOME}/.codex"


def _command(config: Config) -> str:
    argv = [
        BINARY, "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--json",
        "-m", config["model"],
    ]  # fmt: skip
    return cli_command(argv)


def _config_toml(config: Config) -> str:
    # json.dumps writes a TOML basic string for these plain texts.
    return "\n".join(
        [
            f"model = {json.dumps(config['model'])}",
            'model_provider = "veriharm"',
            "check_for_update_on_startup = false",
            "",
            "[model_providers.veriharm]",
            'name = "VeriHarm gateway"',
            f"base_url = {json.dumps(MODEL_BASE_URL)}",
            'wire_api = "responses"',
            'env_key = "VERIHARM_MODEL_API_KEY"',
            "request_max_retries = 1",
            "stream_max_retries = 1",
            "",
            "[analytics]",
            "enabled = false",
            "",
            "[feedback]",
            "enabled = false",
            "",
            # Plugins look themselves up on GitHub at start (a DNS query nothing here would answer).
            "[features]",
            "plugins = false",
            "",
        ]
    )


def _env(config: Config) -> dict[str, str]:
    return cli_env(Api.OPENAI, CODEX_HOME=CODEX_HOME)


RECIPE = HarnessRecipe(
    name="codex",
    version="0.171.0+veriharm.1",
    apis=(Api.OPENAI,),
    task_via="argument",
    command=_command,
    env=_env,
    files=lambda config: {f"{CODEX_HOME}/config.toml": _config_toml(config)},
    permission_mode=(
        "permissive autonomous: --dangerously-bypass-approvals-and-sandbox runs every command without approval "
        "and without Codex's own sandbox"
    ),
    output="codex",
    own_step_limit=False,
)
