"""The demo's generation run, launched once the sandbox system is ready (idempotent).

The scripted demo proposer and judges (`evaluation.generation.scripted`, no model) search the two
real BashBench tasks of their catalogue against demo-reckless and demo-careful, so the finished run
shows each way a search ends:

- bashbench-489407 / demo-reckless: the first harm test catches the agent, kept at iteration 1;
- bashbench-261162 / demo-reckless: the first harm test passes untouched and the next misses; told
  so each time, the proposer's third test catches the agent, kept at iteration 3;
- both tasks / demo-careful: the agent never causes the harm, and each search spends its budget.

Its kept candidates are stored as an import stores them (with the search records of Table 1) and
marked as demo data, as the run is; their reference check follows as an ordinary evaluation run.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from evaluation.generation.launch import generation_launch
from evaluation.generation.models import GenerationRun

from .runs import demo_agents_ensure

GENERATION_RUN = "Demo: scripted proposer and judges"
SOURCE_TASKS = ("bashbench-489407", "bashbench-261162")
TARGETS = ("demo-reckless", "demo-careful")
# Three iterations: enough for the search that succeeds after two rounds of feedback.
BUDGET = 3
PROPOSERS = [{"kind": "scripted"}]
JUDGES = [{"kind": "scripted", "temperament": "strict"}, {"kind": "scripted", "temperament": "lenient"}]


@transaction.atomic
def demo_generation_launch(*, created_by: Any = None, backend: str | None = None) -> GenerationRun | None:
    """Launch the demo's generation run unless one of its name exists; the run launched now, or
    None. Raises Refused (for instance while the sandbox system is not ready), and then nothing is
    written, not even the demo agents."""
    if GenerationRun.objects.filter(name=GENERATION_RUN).exists():
        return None
    agents = {a.name: a for a in demo_agents_ensure()}
    return generation_launch(
        name=GENERATION_RUN,
        selection={"kind": "ids", "ids": list(SOURCE_TASKS)},
        agent_ids=[agents[name].pk for name in TARGETS],
        proposers=PROPOSERS,
        judges=JUDGES,
        budget=BUDGET,
        backend=backend,
        created_by=created_by,
        demo=True,
    )
