"""The demo's native harness run: Claude Code and Codex, each in its real runtime in the sandbox,
driven by the scripted demo model (`model.py`) through the trial's gateway, on one checked demo
candidate, so the transcript viewer shows a native trajectory (the CLI's own tool calls as steps).

Claude Code talks to the reckless demo model and does the harmful reference; Codex to the careful
one and does the safe reference: the run shows both verdicts. It is launched by `demo_evaluate
--wait` once both runtimes are built (the rest of the demo never waits for them) and only if no run
of its name exists.
"""

from __future__ import annotations

import os
from typing import Any

from django.db import transaction

from evaluation.agents.sandbox_status import BUILDING, SandboxStatus, sandbox_status
from evaluation.models import Agent, DemoRun, Protocol, Run
from evaluation.runs.agents import agent_create
from evaluation.runs.launch import run_launch, run_mark_demo

from .. import checked
from ..references import demo_reference_lines
from .model import CAREFUL, MODEL_PREFIX, RECKLESS, ScriptedModelTransport, plays_from

NATIVE_RUN = "Demo: Claude Code and Codex, scripted demo model"
RUNTIMES = ("claude-code", "codex")
# The upstream's name (`evaluation.agents.upstreams`): a reserved host, answered in the worker.
MODEL_HOST = "scripted-demo-model.invalid"
BASE_URL = f"http://{MODEL_HOST}/v1"
# The key the gateway holds for it: a placeholder, set in the worker's environment at start-up
# unless given; the sandbox sees only the dummy key, as with any upstream.
KEY_ENV = "VERIHARM_AGENT_KEY_DEMO_MODEL"
PLACEHOLDER_KEY = "demo-placeholder-key"
# The permission-weakening task: chmod 775 or chmod 777, plain to read in a transcript.
CANDIDATE_TASK = "489407"
STEP_LIMIT = 8
TIME_LIMIT = 300
# (agent name, harness, API it speaks, the demo model's temperament)
AGENTS = (
    ("demo-claude-code", "claude-code", "anthropic", RECKLESS),
    ("demo-codex", "codex", "openai", CAREFUL),
)


def scripted_model_transport() -> ScriptedModelTransport:
    """The scripted demo model for one gateway, knowing every demo candidate with references."""
    return ScriptedModelTransport(lambda: plays_from(demo_reference_lines()), KEY_ENV)


def placeholder_key_ensure() -> None:
    os.environ.setdefault(KEY_ENV, PLACEHOLDER_KEY)


def candidate_id() -> str:
    return checked.candidate_id(next(t for t in checked.TASKS if t.task_id == CANDIDATE_TASK))


def agent_spec(name: str, harness: str, api: str, temperament: str) -> dict[str, Any]:
    """The keyword arguments of `runs.agent_create` for one native demo agent."""
    return {
        "name": name,
        "kind": "harness",
        "config": {
            "harness": harness,
            "model": f"{MODEL_PREFIX}{temperament}",
            "step_limit": STEP_LIMIT,
            "gateway": {"api": api, "base_url": BASE_URL, "api_key_env": KEY_ENV},
        },
        "time_limit": TIME_LIMIT,
    }


def native_agents_ensure() -> list[Agent]:
    """The Claude Code and Codex demo agents (created once; an existing one is kept)."""
    agents = []
    for row in AGENTS:
        spec = agent_spec(*row)
        agents.append(Agent.objects.filter(name=spec["name"]).first() or agent_create(**spec))
    return agents


def native_runtimes_status() -> SandboxStatus:
    return sandbox_status(RUNTIMES)


def native_runtimes_coming() -> bool:
    """Whether a running build will make both runtimes: it is building, and not told to make only
    other harnesses (VERIHARM_HARNESSES, as `make run`'s own test sets it)."""
    chosen = os.environ.get("VERIHARM_HARNESSES", "").split()
    if chosen and not set(RUNTIMES) <= set(chosen):
        return False
    return native_runtimes_status().state == BUILDING


def native_run_exists() -> bool:
    return Run.objects.filter(name=NATIVE_RUN).exists()


@transaction.atomic
def native_run_launch(*, created_by: Any = None, backend: str | None = None) -> Run | None:
    """Launch the native harness demo run unless it exists; the run launched now, or None. Raises
    LaunchRefused (for instance while the runtimes are not built), and then nothing is written."""
    if native_run_exists():
        return None
    agents = native_agents_ensure()
    run = run_launch(
        selection={"kind": "ids", "ids": [candidate_id()]},
        agent_ids=[a.pk for a in agents],
        created_by=created_by,
        name=NATIVE_RUN,
        protocol=Protocol.VERIHARM,
        repetitions=1,
        backend=backend,
    )
    # Synthetic as the other scripted demo runs are: no real model chose these commands.
    return run_mark_demo(run, DemoRun.SCRIPTED_MODEL)
