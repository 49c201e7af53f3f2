"""Reads for the V3AST-Bench pages and API: each system's tasks and scores over one run, the
model x harness matrix, rank stability across systems, and one task's runs with their evidence.

A system is an agent (a model run through a harness). Its tasks are the run's candidates, each
with its risk-run labels and twin results by repetition; `evaluation.v3ast.scoring` does the scoring.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from django.core.cache import cache
from django.db.models import BigIntegerField, Count, F, Prefetch, Q, QuerySet, Sum, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from candidates.models import Candidate
from evaluation.v3ast.twins import ATTACK_SOURCES

from ..models import CURRENT, LABELLED_STATUSES, Agent, Protocol, Run, TranscriptStep, Trial, TrialKind, TrialStatus
from . import scoring as v3ast
from .evidence import MASK_BITS, RISK_CODE, TWIN_CODE, Evidence, TaskRuns, mask_chunks

UNSPECIFIED = "(unspecified)"
# A run's results stay cached this long once no trial is queued or running; a run still going
# changes its key with every label, so its entries are let go sooner.
CACHE_SECONDS = 24 * 60 * 60
OPEN_RUN_CACHE_SECONDS = 5 * 60
# Part of every key: a release that changes what is cached never reads an older release's entries.
CACHE_FORMAT = 3


@dataclass
class SystemResult:
    agent: Agent
    scores: v3ast.SystemScores
    by_source: dict[str, v3ast.SystemScores]
    by_category: dict[str, v3ast.SystemScores]
    # Runs without a label yet (queued, running or cancelled): they count nowhere.
    pending_runs: int
    # Tasks evaluated without any twin run: never eligible.
    without_twin: int
    # Its tasks in the run's order: the labels by repetition, and each task's name and groups.
    evidence: Evidence = field(repr=False)
    task_names: list[str] = field(repr=False)
    task_sources: list[str] = field(repr=False)
    task_categories: list[str] = field(repr=False)

    @property
    def model(self) -> str:
        return self.agent.model or UNSPECIFIED

    @property
    def harness(self) -> str:
        return self.agent.harness or UNSPECIFIED

    @cached_property
    def tasks(self) -> list[TaskRuns]:
        return self.evidence.task_runs(self.task_names, self.task_sources, self.task_categories)


@dataclass
class RunResults:
    run: Run
    repetitions: int
    systems: list[SystemResult]
    rank_stability: list[tuple[int, int, float | None]]
    # Every task of the run once, in the run's order, whichever systems evaluated it.
    tasks: list[str]
    # Where these results are cached, and for how long (see run_results).
    key: str = ""
    timeout: int = CACHE_SECONDS

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
            n_trials=Count("trials", filter=Q(trials__retried_by__isnull=True)),
            n_labelled=Count("trials", filter=Q(trials__retried_by__isnull=True) & ~Q(trials__outcome="")),
            n_agents=Count("agents", distinct=True),
        )
        .order_by("-created_at", "-id")
    )


@dataclass(frozen=True)
class _Task:
    pk: int
    name: str
    source: str
    category: str


def _run_candidates(run: Run) -> list[_Task]:
    """The run's candidates in ranking order, with what the scores group them by."""
    rows = (
        Candidate.objects.filter(pk__in=Trial.objects.filter(run=run).order_by().values("candidate_id"))
        .order_by(F("rank").asc(nulls_last=True), "external_id")
        .values_list("pk", "external_id", KeyTextTransform("attack_source", "extra"), "risk_category")
    )
    return [
        _Task(pk, name, source if source in ATTACK_SOURCES else "", category) for pk, name, source, category in rows
    ]


def _trial_counts(run: Run) -> dict[str, int]:
    """The run's trials, labelled ones and open ones (queued or running), from the (run, status) index alone.

    Retried trials count too: a retry adds a trial and, once it ends, a label, so the numbers only
    grow and the cache key changes with every one (counting each slot's latest alone would give
    the key from before the retry back once it ends)."""
    return Trial.objects.filter(run=run).aggregate(
        total=Count("status"),
        labelled=Count("status", filter=Q(status__in=LABELLED_STATUSES)),
        open=Count("status", filter=Q(status__in=(TrialStatus.QUEUED, TrialStatus.RUNNING))),
    )


def _cache_key(run: Run, agents: list[Agent], candidates: list[_Task], counts: dict[str, int]) -> str:
    """What the run's results depend on, as a cache key. A trial gets its label once and never
    changes after (database triggers refuse it), so with the number of trials and of labelled ones
    the key changes whenever a label is added or a trial comes or goes; the systems and the
    candidates' order and groups are in it too."""
    described = repr(
        (
            CACHE_FORMAT,
            run.repetitions,
            counts["total"],
            counts["labelled"],
            [(a.pk, a.name, a.model, a.harness) for a in agents],
            candidates,
        )
    )
    return f"v3ast-results:{run.pk}:{hashlib.sha256(described.encode()).hexdigest()}"


def _label_masks(repetitions: int) -> dict[str, Sum]:
    """Per system and task, for each label, the repetitions that got it as bits (repetition r is
    bit (r - 1) % 63 of mask (r - 1) // 63). A slot holds one trial, so a sum of distinct powers
    of two is their bitwise or, in any database."""
    masks = {}
    labels = [(f"risk_{code}", ~Q(kind=TrialKind.TWIN), outcome) for outcome, code in RISK_CODE.items()]
    labels += [(f"twin_{code}", Q(kind=TrialKind.TWIN), outcome) for outcome, code in TWIN_CODE.items()]
    for chunk in range(mask_chunks(repetitions)):
        first = chunk * MASK_BITS
        # django-stubs take only an int; Django shifts by any expression, here a column's.
        bit = Cast(Value(1), BigIntegerField()).bitleftshift(F("repetition") - 1 - first)  # type: ignore[arg-type]
        in_chunk = Q(repetition__gt=first, repetition__lte=min(first + MASK_BITS, repetitions))
        for name, kind, outcome in labels:
            masks[f"{name}_{chunk}"] = Sum(
                bit, filter=kind & in_chunk & Q(outcome=outcome), default=0, output_field=BigIntegerField()
            )
    return masks


def _evidence(run: Run, candidates: list[_Task]) -> tuple[list[int], list[int], np.ndarray, dict[str, np.ndarray]]:
    """The run's labels added up in the database per system and task: (agent ids, task indexes
    into `candidates`, runs without a label, the masks by name), rows in the run's order."""
    repetitions = run.repetitions
    masks = _label_masks(repetitions)
    rows = list(
        Trial.objects.filter(CURRENT, run=run)
        .order_by()
        .values("agent_id", "candidate_id")
        .annotate(
            twins=Count("pk", filter=Q(kind=TrialKind.TWIN, repetition__lte=repetitions)),
            unlabelled=Count("pk", filter=Q(outcome="")),
            **masks,
        )
        .values_list("agent_id", "candidate_id", "twins", "unlabelled", *masks)
    )
    order = {task.pk: i for i, task in enumerate(candidates)}
    rows.sort(key=lambda row: (order[row[1]], row[0]))
    table = np.array([row[2:] for row in rows], dtype=np.int64).reshape(len(rows), 2 + len(masks))
    columns = {name: table[:, 2 + i] for i, name in enumerate(masks)}
    return [row[0] for row in rows], [order[row[1]] for row in rows], table[:, :2], columns


def _compute(
    run: Run, agents: list[Agent], candidates: list[_Task]
) -> tuple[list[SystemResult], list[tuple[int, int, float | None]]]:
    repetitions = run.repetitions
    agent_of, task_of, counts, columns = _evidence(run, candidates)
    chunks = mask_chunks(repetitions)

    def stacked(name: str) -> np.ndarray:
        return np.stack([columns[f"{name}_{chunk}"] for chunk in range(chunks)], axis=1)

    evidence = Evidence.of_masks(
        {code: stacked(f"risk_{code}") for code in RISK_CODE.values()},
        {code: stacked(f"twin_{code}") for code in TWIN_CODE.values()},
        counts[:, 0] > 0,
        repetitions,
    )
    agent_ids, task_index = np.array(agent_of, dtype=np.int64), np.array(task_of, dtype=np.int64)
    systems = []
    for agent in agents:
        rows = agent_ids == agent.pk
        own = evidence.rows(rows)
        tasks = [candidates[i] for i in task_index[rows].tolist()]
        sources, categories = [t.source for t in tasks], [t.category for t in tasks]
        systems.append(
            SystemResult(
                agent=agent,
                scores=v3ast.scores_of(own),
                by_source=v3ast.breakdown_of(own, sources),
                by_category=v3ast.breakdown_of(own, categories),
                pending_runs=int(counts[rows, 1].sum()),
                without_twin=int((~own.has_twin).sum()),
                evidence=own,
                task_names=[t.name for t in tasks],
                task_sources=sources,
                task_categories=categories,
            )
        )
    stability = v3ast.rank_stability_of([s.scores.per_repetition_asr for s in systems], repetitions)
    return systems, stability


def run_results(run: Run) -> RunResults:
    """Every system of the run with its scores and breakdowns, and rank stability across them.

    Worked out from one aggregate query (the labels per system and task as bit masks, not a row
    per trial) and kept in Django's cache under a key that changes with anything they depend on
    (`_cache_key`): a day once the run is finished, a few minutes while it is still going."""
    agents = list(run.agents.order_by("model", "harness", "name"))
    candidates = _run_candidates(run)
    counts = _trial_counts(run)
    key = _cache_key(run, agents, candidates, counts)
    timeout = OPEN_RUN_CACHE_SECONDS if counts["open"] else CACHE_SECONDS
    cached = cache.get(key)
    if cached is None:
        cached = _compute(run, agents, candidates)
        cache.set(key, cached, timeout)
    systems, stability = cached
    return RunResults(
        run=run,
        repetitions=run.repetitions,
        systems=systems,
        rank_stability=stability,
        tasks=[t.name for t in candidates],
        key=key,
        timeout=timeout,
    )


def system_results(run: Run, agent_id: int) -> tuple[RunResults, SystemResult | None]:
    """The run's results with one system's spreads of ASR@n worked out; those are kept in the cache
    beside the run's results, as the spreads of a run with unlabelled runs can take a while."""
    results = run_results(run)
    system = results.system(agent_id)
    if system is None:
        return results, None
    key = f"{results.key}:system:{agent_id}"
    cached = cache.get(key)
    if cached is None:
        system.scores.asr_at_n_spread  # noqa: B018 - worked out now, to be kept with the system
        cache.set(key, system, results.timeout)
    else:
        system = cached
        results.systems = [system if s.agent.pk == agent_id else s for s in results.systems]
    return results, system


def matrix_of(systems: list[SystemResult]) -> Matrix:
    matrix = Matrix(models=sorted({s.model for s in systems}), harnesses=sorted({s.harness for s in systems}))
    for system in systems:
        matrix.cells.setdefault((system.model, system.harness), []).append(system)
    return matrix


def task_trials(run: Run, candidate_id: int) -> list[tuple[Agent, list[Trial]]]:
    """Each slot's latest trial of one candidate in the run, with its transcript, grouped by system
    (a trial a retry replaced is read on its own trial page)."""
    trials = (
        Trial.objects.filter(CURRENT, run=run, candidate_id=candidate_id)
        .select_related("agent", "candidate")
        .only(*TASK_PAGE_FIELDS)
        .prefetch_related(Prefetch("steps", queryset=TranscriptStep.objects.order_by("attempt", "index")))
        .order_by("agent__model", "agent__harness", "agent__name", "repetition", "kind")
    )
    grouped: dict[int, tuple[Agent, list[Trial]]] = {}
    for trial in trials:
        grouped.setdefault(trial.agent_id, (trial.agent, []))[1].append(trial)
    return list(grouped.values())


# What a task page shows of each trial (not its pinned agent configuration or its lease).
TASK_PAGE_FIELDS = (
    *(
        f.name
        for f in Trial._meta.concrete_fields
        if f.name not in ("agent_config", "system_identity", "final_state_note", "lease_token", "worker")
    ),
    "agent__name",
    "agent__model",
    "agent__harness",
    "candidate__revision",
)


@dataclass(frozen=True)
class TaskInputs:
    revision: int | None  # the candidate revision the trials ran; None: no inputs were pinned
    instruction: str  # the risk task t~ as the agents saw it
    twin_instruction: str | None  # the capability twin's, None without twin trials


def task_inputs(run: Run, candidate_id: int) -> TaskInputs:
    """What the task's trials were given, as pinned at launch (one revision for every trial of a run)."""
    trials = Trial.objects.filter(run=run, candidate_id=candidate_id, inputs__isnull=False)
    # In the order of the slot index (run, candidate, agent, kind, repetition), which finds the first at once.
    trials = trials.order_by("agent_id", "kind", "repetition")
    risk = trials.exclude(kind=TrialKind.TWIN).values_list("candidate_revision", "inputs__instruction").first()
    twin = trials.filter(kind=TrialKind.TWIN).values_list("inputs__instruction", flat=True).first()
    return TaskInputs(revision=risk[0] if risk else None, instruction=risk[1] if risk else "", twin_instruction=twin)


def task_runs_version(run: Run, candidate: Candidate) -> tuple[int, str | None]:
    """How many trials the candidate has in the run, and a key for its runs as a task page shows
    them: None while any of them is queued or running. A finished trial never changes (database
    triggers), so the key names what else changes the page: the trials' number, the systems, and
    the candidate's revision (which makes results stale)."""
    counts = Trial.objects.filter(run=run, candidate=candidate).aggregate(
        total=Count("pk"), open=Count("pk", filter=Q(status__in=(TrialStatus.QUEUED, TrialStatus.RUNNING)))
    )
    if counts["open"] or not counts["total"]:
        return counts["total"], None
    agents = list(run.agents.order_by("pk").values_list("pk", "name", "model", "harness"))
    described = repr((CACHE_FORMAT, candidate.revision, counts["total"], agents))
    return counts["total"], f"{run.pk}:{candidate.pk}:{hashlib.sha256(described.encode()).hexdigest()}"
