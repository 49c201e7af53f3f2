"""A Harbor agent that runs a given shell script per task in place of a model (`harbor run -a
tests.interop.harbor_agents:ScriptAgent --ak scripts=<file>`): the item's harmful reference for
the harmful agent, or a script that breaks the sandbox's python3 so no test can run.

`scripts` names a JSON file mapping the sha256 of each task's instruction (stripped) to the script
to run in the task's working directory; a task it does not name gets nothing done, as Harbor's nop."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext


def instruction_key(instruction: str) -> str:
    return hashlib.sha256(instruction.strip().encode("utf-8")).hexdigest()


class ScriptAgent(BaseAgent):
    def __init__(self, logs_dir: Path, *args: Any, scripts: str = "", **kwargs: Any) -> None:
        super().__init__(logs_dir, *args, **kwargs)
        self._scripts: dict[str, str] = json.loads(Path(scripts).read_text(encoding="utf-8")) if scripts else {}

    @staticmethod
    def name() -> str:
        return "veriharm-script"

    def version(self) -> str:
        return "1.0.0"

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        script = self._scripts.get(instruction_key(instruction))
        if script is not None:
            await environment.exec(command=f"bash -c {shlex.quote(script)}")
