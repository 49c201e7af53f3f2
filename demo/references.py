"""Run the demo candidates' reference scripts in the real sandbox, without a database.

Each candidate with `references` is run three times on its source task's environment, as the
reference agents of an evaluation would run it: the safe script must give (r_task, r_harm) =
(1, 0), the harmful one (1, 1) and the no-op (0, 0). Its capability twin is run with the safe
script and must pass its task test. `manage.py check_demo_references` prints the table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from evaluation.agents.base import AgentRunner
from evaluation.agents.reference import EXPECTED, NOOP, NoopAgent, ReferenceAgent
from evaluation.sandbox.registry import get_backend
from evaluation.trials.protocol import TrialSpec, trial_run
from evaluation.v3ast.twins import TWIN_REFERENCE_SCRIPT

from . import checked
from .generated import EXAMPLES_DIR

TWIN = "twin"
AGENT_TIME_LIMIT = 120.0
TEST_TIMEOUT = 120.0


@dataclass(frozen=True)
class ReferenceResult:
    candidate_id: str
    check: str
    expected: tuple[int, int | None]
    got: tuple[int, int | None]
    output: str

    @property
    def ok(self) -> bool:
        return self.expected == self.got


def demo_reference_lines() -> list[dict[str, Any]]:
    """Every demo candidate that brings reference scripts: the examples and the checked tasks."""
    lines: list[dict[str, Any]] = []
    with open(EXAMPLES_DIR / "candidates_with_twins.jsonl", encoding="utf-8") as handle:
        lines.extend(json.loads(raw) for raw in handle if raw.strip())
    lines.extend(checked.checked_lines())
    return [line for line in lines if line.get("kind") == "candidate" and line.get("references")]


def _runs(line: dict[str, Any]) -> Iterable[tuple[str, AgentRunner, TrialSpec, tuple[int, int | None]]]:
    source = line["source_task"]
    environment = source.get("environment")
    for check in (*line["references"], NOOP):
        agent: AgentRunner = NoopAgent() if check == NOOP else ReferenceAgent(line["references"][check])
        spec = TrialSpec(
            environment=environment,
            instruction=line["instruction"],
            task_test=source["task_test"],
            harm_test=line["harm_test"],
            agent_time_limit=AGENT_TIME_LIMIT,
            test_timeout=TEST_TIMEOUT,
        )
        yield check, agent, spec, EXPECTED[check]
    twin = line.get("twin")
    if twin and line["references"].get(TWIN_REFERENCE_SCRIPT):
        spec = TrialSpec(
            environment=environment,
            instruction=twin["instruction"],
            task_test=twin.get("task_test") or source["task_test"],
            harm_test=None,
            agent_time_limit=AGENT_TIME_LIMIT,
            test_timeout=TEST_TIMEOUT,
        )
        yield TWIN, ReferenceAgent(line["references"][TWIN_REFERENCE_SCRIPT]), spec, (1, None)


def references_check(
    lines: list[dict[str, Any]],
    *,
    backend: str = "local",
    workers: int = 2,
    progress: Callable[[ReferenceResult], None] = lambda result: None,
) -> list[ReferenceResult]:
    """Every reference run of `lines` in the sandbox; results in the order of the lines."""
    jobs = [(line["id"], *run) for line in lines for run in _runs(line)]

    def one(job: tuple[str, str, AgentRunner, TrialSpec, tuple[int, int | None]]) -> ReferenceResult:
        candidate_id, check, agent, spec, expected = job
        outcome = trial_run(get_backend(backend), spec, agent, record=lambda step: None)
        output = f"agent:\n{outcome.agent.output}\nV_task:\n{outcome.task.output}"
        if outcome.harm is not None:
            output += f"\nV_harm:\n{outcome.harm.output}"
        result = ReferenceResult(candidate_id, check, expected, (outcome.r_task, outcome.r_harm), output)
        progress(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="demo-reference") as pool:
        return list(pool.map(one, jobs))
