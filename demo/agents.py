"""Scripted demo agents: `command` agents that need no model and no network.

Each carries a playbook of the demo tasks it "knows" (the candidates' own reference scripts) and
recognises a task by its first line; it tells the risk task from its capability twin by the twin's
sha256. What it then does is its temperament:

- careful: the safe solution, always (safe completion, a capable twin);
- reckless: follows the perturbed task to the harmful solution; solves the twin safely;
- sloppy: a coin toss each trial: the harmful solution, the safe one, or a half-done one (scripts
  left without their execute bit), on the twin too, so its repetitions differ.

On a task it does not know it does nothing. The program runs inside the sandbox with the sandbox's
own python3.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from evaluation.models import AgentKind
from evaluation.provenance.synthetic import SCRIPTED_HARNESS

HARNESS = SCRIPTED_HARNESS
TIME_LIMIT = 120
TEMPERAMENTS = ("careful", "sloppy", "reckless")
NAME_PREFIX = "demo-"

# The heredoc's end marker; a playbook containing it on a line of its own would end the program early.
_END = "VERIHARM_DEMO_AGENT_END"

_PROGRAM = r"""
import hashlib, json, random, subprocess, sys

TEMPERAMENT = __TEMPERAMENT__
PLAYBOOK = json.loads(__PLAYBOOK__)
BROKEN = "\nchmod a-x ./*.sh 2>/dev/null || true\n"

task = open(sys.argv[1], encoding="utf-8").read()
title = next((line.strip() for line in task.splitlines() if line.strip()), "")
entry = PLAYBOOK.get(title)
if entry is None:
    print(f"demo agent ({TEMPERAMENT}): I do not know the task {title!r}; I leave the environment as it is.")
    sys.exit(0)
twin = hashlib.sha256(task.encode()).hexdigest() in entry["twins"]
if TEMPERAMENT == "careful":
    plan = "safe"
elif TEMPERAMENT == "reckless":
    plan = "safe" if twin else "harmful"
else:
    choices = ["safe", "safe", "safe", "half-done"] if twin else ["harmful", "safe", "half-done"]
    plan = random.SystemRandom().choice(choices)
script = entry["harmful"] if plan == "harmful" else entry["safe"] + (BROKEN if plan == "half-done" else "")
print(f"demo agent ({TEMPERAMENT}): {'the benign twin' if twin else 'the task'} {title!r}; plan: {plan}", flush=True)
sys.exit(subprocess.run(["bash", "-c", script]).returncode)
"""


def _title(instruction: str) -> str:
    return next((line.strip() for line in instruction.splitlines() if line.strip()), "")


def playbook(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Title of the source task -> its safe and harmful scripts and the sha256 of its twins."""
    book: dict[str, dict[str, Any]] = {}
    for line in lines:
        references = line.get("references") or {}
        if not references.get("safe") or not references.get("harmful"):
            continue
        entry = book.setdefault(
            _title(line["source_task"]["instruction"]),
            {"safe": references["safe"], "harmful": references["harmful"], "twins": []},
        )
        if line.get("twin"):
            entry["twins"].append(hashlib.sha256(line["twin"]["instruction"].encode()).hexdigest())
    return book


def command_template(temperament: str, lines: list[dict[str, Any]]) -> str:
    if temperament not in TEMPERAMENTS:
        raise ValueError(f"temperament must be one of {', '.join(TEMPERAMENTS)}")
    program = _PROGRAM.replace("__TEMPERAMENT__", repr(temperament)).replace(
        "__PLAYBOOK__", repr(json.dumps(playbook(lines), sort_keys=True))
    )
    if f"\n{_END}\n" in program:
        raise ValueError("the playbook contains the program's end marker")
    return f"python3 - {{task_file}} <<'{_END}'\n{program.strip()}\n{_END}\n"


def agent_specs(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The keyword arguments of `runs.agent_create` for each demo agent."""
    return [
        {
            "name": f"{NAME_PREFIX}{temperament}",
            "kind": AgentKind.COMMAND,
            "model": f"{NAME_PREFIX}{temperament}",
            "harness": HARNESS,
            "config": {"command": command_template(temperament, lines)},
            "time_limit": TIME_LIMIT,
        }
        for temperament in TEMPERAMENTS
    ]
