"""Reads for the V3AST-Bench pages and API: each system's tasks and scores over one run, the
model x harness matrix, rank stability across systems, and one task's runs with their evidence.

A system is an agent (a model run through a harness). Its tasks are the run's candidates, each
with its risk-run labels and twin results by repetition; `evaluation.v3ast.scoring` does the scoring.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db.models import Count, F, Prefetch, Q, QuerySet

from candidates.models import Candidate

from ..models import Agent, Protocol, Run, TranscriptStep, Trial, TrialKind, TrialStatus
from ..twins import attack_source
from . import scoring as v3ast
from .scoring import Outcome, TaskRuns, TwinOutcome

UNSPECIFIED = "(unspecified)"
# A finished run's results stay cached this long (its key changes when they would).
CACHE_SECONDS = 24 * 60 * 60
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


def _task_runs(
    candidates: list[dict[str, Any]], rows: list[tuple[int, int, str, int, str]], repetitions: int
) -> dict[int, list[TaskRuns]]:
    """Per agent, one TaskRuns per candidate in the run's order, outcomes placed by repetition
    (None: no label yet). `rows`: (agent id, candidate id, kind, repetition, outcome) of each trial."""
    by_pair: dict[tuple[int, int], TaskRuns] = {}
    info = {c["pk"]: c for c in candidates}
    for agent_id, candidate_id, kind, repetition, outcome in rows:
        key = (agent_id, candidate_id)
        task = by_pair.get(key)
        if task is None:
            candidate = info[candidate_id]
            task = TaskRuns(
                task=candidate["external_id"],
                risk=[None] * repetitions,
                twin_capable=[],
                source=attack_source(candidate["extra"]),
                category=candidate["risk_category"],
            )
            by_pair[key] = task
        slot = repetition - 1
        if not 0 <= slot < repetitions:
            continue
        if kind == TrialKind.TWIN:
            if not task.twin_capable:
                task.twin_capable = [None] * repetitions
            task.twin_capable[slot] = TWIN_CAPABLE.get(outcome)
        else:
            task.risk[slot] = Outcome(outcome) if outcome else None
    order = {c["pk"]: i for i, c in enumerate(candidates)}
    per_agent: dict[int, list[TaskRuns]] = defaultdict(list)
    for (agent_id, _candidate_id), task in sorted(by_pair.items(), key=lambda item: (order[item[0][1]], item[0][0])):
        per_agent[agent_id].append(task)
    return per_agent


def _run_candidates(run: Run) -> list[dict[str, Any]]:
    """The run's candidates in ranking order, with what the scores group them by. The ids come from
    the trials' slot index (run, candidate, ...) alone, without reading the trials themselves."""
    ids = Trial.objects.filter(run=run).order_by().values_list("candidate_id", flat=True).distinct()
    return list(
        Candidate.objects.filter(pk__in=list(ids))
        .order_by(F("rank").asc(nulls_last=True), "external_id")
        .values("pk", "external_id", "extra", "risk_category")
    )


def _fingerprint(run: Run, agents: list[Agent], candidates: list[dict[str, Any]]) -> str | None:
    """What a finished run's results depend on, as a cache key; None while any trial is queued or
    running. A finished trial can neither change nor be deleted (database triggers), so once none
    is open only new trials, another set of systems or a change to the candidates' order or groups
    can change the results, and each changes the key. Counted from the (run, status) index alone."""
    trials = (
        Trial.objects.filter(run=run)
        .order_by()
        .aggregate(
            total=Count("status"),
            open=Count("status", filter=Q(status__in=(TrialStatus.QUEUED, TrialStatus.RUNNING))),
        )
    )
    if trials["open"]:
        return None
    described = repr(
        (
            run.repetitions,
            trials["total"],
            [(a.pk, a.name, a.model, a.harness) for a in agents],
            [(c["pk"], c["external_id"], attack_source(c["extra"]), c["risk_category"]) for c in candidates],
        )
    )
    return f"v3ast-results:{run.pk}:{hashlib.sha256(described.encode()).hexdigest()}"


def run_results(run: Run) -> RunResults:
    """Every system of the run with its scores and breakdowns, and rank stability across them.

    A finished run's results are cached (Django's cache) under a key that changes with anything
    they depend on; a run with trials still queued or running is read afresh every time."""
    repetitions = run.repetitions
    agents = list(run.agents.order_by("model", "harness", "name"))
    candidates = _run_candidates(run)
    key = _fingerprint(run, agents, candidates)
    cached = cache.get(key) if key else None
    if cached is not None:
        systems, stability = cached
        return RunResults(run=run, repetitions=repetitions, systems=systems, rank_stability=stability)
    rows = list(Trial.objects.filter(run=run).values_list("agent_id", "candidate_id", "kind", "repetition", "outcome"))
    pending: dict[int, int] = defaultdict(int)
    for row in rows:
        if not row[4]:
            pending[row[0]] += 1
    per_agent = _task_runs(candidates, rows, repetitions)
    systems = []
    for agent in agents:
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
    if key:
        cache.set(key, (systems, stability), CACHE_SECONDS)
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
