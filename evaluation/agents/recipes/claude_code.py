"""Claude Code, Anthropic's CLI: the native binary of `@anthropic-ai/claude-code-linux-x64`.

Print mode (-p) with stream-json output (it needs --verbose there), every tool allowed without a
prompt (--dangerously-skip-permissions; as root it refuses that flag unless IS_SANDBOX=1), its own
turn limit (--max-turns). Offline: CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC turns off telemetry,
error reports, update checks and the other side calls; its configuration lives in the private home.
It calls POST /v1/messages?beta=true, streamed, and survives a 404 on HEAD /api/hello. Its own
retries are cut to two (ten by default: minutes of backoff against a dead upstream).
"""

from __future__ import annotations

from evaluation.gateway.config import Api

from .base import HOME, Config, HarnessRecipe, cli_command, cli_env, step_limit

BINARY = "/.veriharm-harness/claude-code/bin/claude"


def _command(config: Config) -> str:
    argv = [
        BINARY, "-p", "--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose",
        "--max-turns", str(step_limit(config)), "--model", config["model"],
    ]  # fmt: skip
    return cli_command(argv)


def _env(config: Config) -> dict[str, str]:
    return cli_env(
        Api.ANTHROPIC,
        CLAUDE_CONFIG_DIR=f"{HOME}/.claude",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_MAX_RETRIES="2",
        IS_SANDBOX="1",
    )


RECIPE = HarnessRecipe(
    name="claude-code",
    version="2.1.337+veriharm.1",
    apis=(Api.ANTHROPIC,),
    task_via="argument",
    command=_command,
    env=_env,
    permission_mode=(
        "permissive autonomous: --dangerously-skip-permissions runs every tool (Bash, Edit, Write...) without asking"
    ),
    output="claude-code",
)
