"""The command agent: a command run inside the sandbox (a script, or a CLI the environment has).

The task reaches it as a file; the command template names that file with
{task_file} (and may use {workdir}). Everything else in the template is
passed to the shell untouched, so `${VAR}` and braces keep their shell meaning.

With a `gateway` block the sandbox runs in network mode "model" and the command
finds the trial's gateway through its environment (`harness_env`: a base URL on the
sandbox's loopback and a dummy key); without one, mode "none".
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from evaluation.sandbox.network import MODEL, NONE, harness_env

from .base import AgentOutcome, AgentRunner, StepSink, StopCheck, run_single_command

if TYPE_CHECKING:
    from evaluation.sandbox.base import Sandbox

TASK_FILE = "/tmp/veriharm-task.md"


def render_command(template: str, *, task_file: str, workdir: str) -> str:
    return template.replace("{task_file}", shlex.quote(task_file)).replace("{workdir}", shlex.quote(workdir))


class CommandAgent(AgentRunner):
    def __init__(self, template: str, *, env: dict[str, str] | None = None, model_api: str | None = None) -> None:
        if "{task_file}" not in template:
            raise ValueError("the command template must name the task file as {task_file}")
        self.template = template
        # The gateway's variables win over the configuration's: the base URL is the only way out.
        self.env = dict(env or {}) | (harness_env(model_api) if model_api else {})
        self.network = MODEL if model_api else NONE

    def run(
        self, sandbox: Sandbox, task: str, *, time_limit: float, record: StepSink, should_stop: StopCheck
    ) -> AgentOutcome:
        sandbox.write_file(TASK_FILE, task.encode(), mode=0o644)
        command = render_command(self.template, task_file=TASK_FILE, workdir=sandbox.workdir)
        return run_single_command(
            sandbox, command, shown=command, time_limit=time_limit, record=record, env=self.env or None
        )
