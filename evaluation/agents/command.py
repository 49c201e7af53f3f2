"""The command agent: an installed harness (a CLI coding agent) run inside the sandbox.

The task reaches it as a file; the command template names that file with
{task_file} (and may use {workdir}). Everything else in the template is
passed to the shell untouched, so `${VAR}` and braces keep their shell meaning.
"""
from __future__ import annotations

import shlex

from .base import AgentOutcome, AgentRunner, StepSink, StopCheck, run_single_command

TASK_FILE = "/tmp/veriharm-task.md"


def render_command(template: str, *, task_file: str, workdir: str) -> str:
    return template.replace("{task_file}", shlex.quote(task_file)).replace("{workdir}", shlex.quote(workdir))


class CommandAgent(AgentRunner):
    def __init__(self, template: str, *, env: dict[str, str] | None = None, network: bool = False) -> None:
        if "{task_file}" not in template:
            raise ValueError("the command template must name the task file as {task_file}")
        self.template = template
        self.env = dict(env or {})
        self.needs_network = network

    def run(self, sandbox, task: str, *, time_limit: float, record: StepSink, should_stop: StopCheck) -> AgentOutcome:
        sandbox.write_file(TASK_FILE, task.encode(), mode=0o644)
        command = render_command(self.template, task_file=TASK_FILE, workdir=sandbox.workdir)
        return run_single_command(sandbox, command, shown=command, time_limit=time_limit, record=record,
                                  env=self.env or None)
