"""Reads for the V3AST-Bench pages and API: each system's tasks and scores over one run, the
model x harness matrix, rank stability across systems, and one task's runs with their evidence.

A system is an agent (a model run through a harness). Its tasks are the run's candidates, each
with its risk-run labels and twin results by repetition; `evaluation.v3ast.scoring` does the scoring.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet

from . import scoring as v3ast
from ..models import Agent, Protocol, Run, Trial, TrialKind, TranscriptStep
from ..twins import attack_source
from .scoring import Outcome, TaskRuns, TwinOutcome

UNSPECIFIED = "(unspecified)"
TWIN_CAPABLE = {TwinOutcome.CAPABLE.value: True, TwinOutcome.NOT_CAPABLE.value: False}


@dataclass
class SystemResult:
    agent: Agent
    tasks: list[TaskRuns]
    scores: v3ast.SystemScores
    by_source: dict[str, v3ast.SystemScores]
    by_category: dict[str, v3ast.SystemScores]
    # Runs without a label yet (queued, running or cancelled): they count nowhere.
    pending_runs: int
    # Tasks evaluated without any twin run: never eligible.
    without_twin: int

    @property
    def model(self) -> str:
        return self.agent.model or UNSPECIFIED

    @property
    def harness(self) -> str:
        return self.agent.harness or UNSPECIFIED


@dataclass
class RunResults:
    run: Run
    repetitions: int
    systems: list[SystemResult]
    rank_stability: list[tuple[int, int, float | None]]

    def system(self, agent_id: int) -> SystemResult | None:
        return next((s for s in self.systems if s.agent.pk == agent_id), None)


@dataclass
class Matrix:
    """Rows models, columns harnesses; a cell holds the systems of that pair (usually one)."""

    models: list[str]
    harnesses: list[str]
    cells: dict[tuple[str, str], list[SystemResult]] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, list[list[SystemResult]]]]:
        return [(m, [self.cells.get((m, h), []) for h in self.harnesses]) for m in self.models]


def v3ast_runs() -> QuerySet[Run]:
    """Runs of the V3AST protocol, newest first, with their trial counts."""
    return (
        Run.objects.filter(protocol=Protocol.V3AST)
        .annotate(
            n_trials=Count("trials"),
            n_labelled=Count("trials", filter=~Q(trials__outcome="")),
            n_agents=Count("agents", distinct=True),
        )
        .order_by("-created_at", "-id")
    )


def _task_runs(rows: list[dict[str, Any]], repetitions: int) -> dict[int, list[TaskRuns]]:
    """Per agent, one TaskRuns per candidate, outcomes placed by repetition (None: no label yet)."""
    by_pair: dict[tuple[int, int], TaskRuns] = {}
    per_agent: dict[int, list[TaskRuns]] = defaultdict(list)
    for row in rows:
        key = (row["agent_id"], row["candidate_id"])
        task = by_pair.get(key)
        if task is None:
            task = TaskRuns(
                task=row["candidate__external_id"], risk=[None] * repetitions, twin_capable=[],
                source=attack_source(row["candidate__extra"]), category=row["candidate__risk_category"],
            )
            by_pair[key] = task
            per_agent[row["agent_id"]].append(task)
        slot = row["repetition"] - 1
        if not 0 <= slot < repetitions:
            continue
        if row["kind"] == TrialKind.TWIN:
            if not task.twin_capable:
                task.twin_capable = [None] * repetitions
            task.twin_capable[slot] = TWIN_CAPABLE.get(row["outcome"])
        else:
            task.risk[slot] = Outcome(row["outcome"]) if row["outcome"] else None
    return per_agent


def run_results(run: Run) -> RunResults:
    """Every system of the run with its scores and breakdowns, and rank stability across them."""
    repetitions = run.repetitions
    rows = list(
        Trial.objects.filter(run=run)
        .order_by("candidate__rank", "candidate__external_id", "kind", "repetition")
        .values("agent_id", "candidate_id", "kind", "repetition", "outcome", "candidate__external_id",
                "candidate__extra", "candidate__risk_category")
    )
    pending: dict[int, int] = defaultdict(int)
    for row in rows:
        if not row["outcome"]:
            pending[row["agent_id"]] += 1
    per_agent = _task_runs(rows, repetitions)
    systems = []
    for agent in run.agents.order_by("model", "harness", "name"):
        tasks = per_agent.get(agent.pk, [])
        systems.append(
            SystemResult(
                agent=agent,
                tasks=tasks,
                scores=v3ast.system_scores(tasks, repetitions),
                by_source=v3ast.breakdown(tasks, repetitions, lambda t: t.source),
                by_category=v3ast.breakdown(tasks, repetitions, lambda t: t.category),
                pending_runs=pending.get(agent.pk, 0),
                without_twin=sum(not t.twin_capable for t in tasks),
            )
        )
    stability = v3ast.rank_stability({s.agent.name: s.tasks for s in systems}, repetitions)
    return RunResults(run=run, repetitions=repetitions, systems=systems, rank_stability=stability)


def matrix_of(systems: list[SystemResult]) -> Matrix:
    matrix = Matrix(models=sorted({s.model for s in systems}), harnesses=sorted({s.harness for s in systems}))
    for system in systems:
        matrix.cells.setdefault((system.model, system.harness), []).append(system)
    return matrix


def task_trials(run: Run, candidate_id: int) -> list[tuple[Agent, list[Trial]]]:
    """Every trial of one candidate in the run, with its transcript, grouped by system."""
    trials = (
        Trial.objects.filter(run=run, candidate_id=candidate_id)
        .select_related("agent", "candidate", "inputs")
        .defer("candidate__instruction", "candidate__harm_test", "candidate__references", "candidate__twin")
        .prefetch_related(Prefetch("steps", queryset=TranscriptStep.objects.order_by("attempt", "index")))
        .order_by("agent__model", "agent__harness", "agent__name", "repetition", "kind")
    )
    grouped: dict[int, tuple[Agent, list[Trial]]] = {}
    for trial in trials:
        grouped.setdefault(trial.agent_id, (trial.agent, []))[1].append(trial)
    return list(grouped.values())
