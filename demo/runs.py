"""The demo's evaluation runs, launched once the sandbox system is ready (idempotent).

- the reference check (safe, harmful, no-op) of every candidate of the labelled demo study, so the
  study's results show the tests' own verdict beside the votes;
- the scripted demo agents on the checked candidates under the V3AST-Bench protocol, each beside its
  capability twin, for run metrics, the model x harness matrix and per-task pages.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.db import transaction

from candidates.models import Candidate
from evaluation.agents.sandbox_status import runtimes_of
from evaluation.models import Agent, DemoRun, Protocol, Run
from evaluation.runs.agents import agent_create, reference_agents_ensure
from evaluation.runs.launch import run_launch, run_mark_demo

from . import checked
from .agents import agent_specs
from .references import demo_reference_lines
from .users import demo_refusal

REFERENCE_RUN = "Demo: reference check of the labelled study"
AGENTS_RUN = "Demo: scripted agents, V3AST-Bench"
# Two risk and two twin runs per task and agent: enough for ASR@n and a spread, in a few minutes.
AGENT_REPETITIONS = 2


def demo_runs_pending() -> bool:
    """Whether this database holds the demo's checked candidates but not yet its runs: `make run`
    launches them by itself once the sandbox system is ready (`demo_evaluate --wait`)."""
    if demo_refusal() is not None or Run.objects.filter(name__in=(REFERENCE_RUN, AGENTS_RUN)).exists():
        return False
    return Candidate.objects.filter(external_id=checked.candidate_id(checked.TASKS[0])).exists()


def demo_runtimes() -> tuple[str, ...]:
    """The harness runtimes the demo's agents run (the scripted command agents, the reference agents
    and the scripted proposer's targets: none), so the demo waits for the base system alone."""
    specs = [SimpleNamespace(kind=s["kind"], config=s["config"]) for s in agent_specs(demo_reference_lines())]
    return runtimes_of(specs)


def demo_agents_ensure() -> list[Agent]:
    """The careful, sloppy and reckless command agents (created once; an existing one is kept)."""
    agents = []
    for spec in agent_specs(demo_reference_lines()):
        agent = Agent.objects.filter(name=spec["name"]).first()
        agents.append(agent or agent_create(**spec))
    return agents


@transaction.atomic
def demo_runs_launch(*, study_id: int | None, created_by: Any = None) -> list[Run]:
    """Launch each demo run that does not exist yet; returns the runs launched now.
    Raises LaunchRefused (for instance while the sandbox system is not ready), and then
    nothing is written, not even the demo agents."""
    launched = []
    if study_id is not None and not Run.objects.filter(name=REFERENCE_RUN).exists():
        references = reference_agents_ensure()
        run = run_launch(
            selection={"kind": "study", "study": study_id},
            agent_ids=[a.pk for a in references],
            created_by=created_by,
            name=REFERENCE_RUN,
            protocol=Protocol.VERIHARM,
            repetitions=1,
        )
        launched.append(run_mark_demo(run, DemoRun.REFERENCES))
    if not Run.objects.filter(name=AGENTS_RUN).exists():
        agents = demo_agents_ensure()
        run = run_launch(
            selection={"kind": "ids", "ids": [checked.candidate_id(t) for t in checked.TASKS]},
            agent_ids=[a.pk for a in agents],
            created_by=created_by,
            name=AGENTS_RUN,
            protocol=Protocol.V3AST,
            repetitions=AGENT_REPETITIONS,
        )
        launched.append(run_mark_demo(run, DemoRun.SCRIPTED))
    return launched
