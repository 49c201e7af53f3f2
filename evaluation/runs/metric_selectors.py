"""A run's metrics as its pages, API and exports read them: Table 2 per agent, its flat rows, and two
agents (or two runs) paired by item."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import Count, F, Q, QuerySet

from evaluation.models import (
    CURRENT,
    Agent,
    Run,
    Trial,
    TrialKind,
    TrialStatus,
)
from evaluation.runs import metrics, paired
from veriharm_site.refusals import Refused


@dataclass
class AgentMetrics:
    agent: Agent
    overall: metrics.Metrics | None
    unresolved: int
    stale: int
    excluded_candidates: int
    by_perturbation: dict[str, metrics.Metrics] = field(default_factory=dict)
    by_risk_category: dict[str, metrics.Metrics] = field(default_factory=dict)


def _tally_rows(trials: QuerySet[Trial]) -> Iterable[Mapping[str, Any]]:
    """One row per (agent, candidate) of these trials, with the counts of a `metrics.Tally`."""
    done = Q(status=TrialStatus.DONE)
    return (
        trials.values("agent_id", "candidate_id", "candidate__perturbation", "candidate__risk_category")
        .annotate(
            n_done=Count("pk", filter=done),
            n_task=Count("pk", filter=done & Q(r_task=1)),
            n_harmful=Count("pk", filter=done & Q(r_task=1, r_harm=1)),
            n_harm=Count("pk", filter=done & Q(r_harm=1)),
            n_unresolved=Count("pk", filter=Q(status=TrialStatus.UNRESOLVED)),
            n_stale=Count("pk", filter=done & ~Q(candidate_revision=F("candidate__revision"))),
        )
        .order_by("agent_id", "candidate_id")
    )


def _tally_of(row: Mapping[str, Any]) -> metrics.Tally:
    return metrics.Tally(
        candidate=row["candidate_id"],
        trials=row["n_done"],
        task=row["n_task"],
        harmful=row["n_harmful"],
        harm=row["n_harm"],
        perturbation=row["candidate__perturbation"],
        risk_category=row["candidate__risk_category"],
    )


def run_metrics(run: Run) -> list[AgentMetrics]:
    """Per agent of the run: the metrics over its done risk trials; unresolved ones are counted, not
    scored. Each slot counts once, by its latest trial where a retry replaced one. Capability twins
    have no harm test and stay out of Table 2.

    The database counts each (agent, candidate)'s trials (`metrics.Tally`), so a run of thousands
    of trials reads one row per agent and candidate; the metrics are the same exact fractions."""
    rows = _tally_rows(Trial.objects.filter(CURRENT, run=run, kind=TrialKind.RISK))
    tallies: dict[int, list[metrics.Tally]] = defaultdict(list)
    unresolved: dict[int, int] = defaultdict(int)
    stale: dict[int, int] = defaultdict(int)
    excluded: dict[int, int] = defaultdict(int)
    for row in rows:
        agent_id = row["agent_id"]
        unresolved[agent_id] += row["n_unresolved"]
        stale[agent_id] += row["n_stale"]
        if not row["n_done"]:
            excluded[agent_id] += 1  # tried, never scored
            continue
        tallies[agent_id].append(_tally_of(row))
    result = []
    for agent in sorted(run.agents.all(), key=lambda a: a.name):
        counted = tallies.get(agent.pk, [])
        result.append(
            AgentMetrics(
                agent=agent,
                overall=metrics.compute_tallied(counted),
                unresolved=unresolved.get(agent.pk, 0),
                stale=stale.get(agent.pk, 0),
                excluded_candidates=excluded.get(agent.pk, 0),
                by_perturbation=metrics.breakdown_tallied(counted, lambda c: c.perturbation),
                by_risk_category=metrics.breakdown_tallied(counted, lambda c: c.risk_category),
            )
        )
    return result


@dataclass(frozen=True)
class PairedComparison:
    run: Run
    a: Agent
    b: Agent
    comparison: paired.Comparison
    run_b: Run | None = None  # B's run when it is another run than A's


def comparable_runs(run: Run) -> list[Run]:
    """The other runs whose items are this run's: those of the same frozen release (the same
    checksum), newest first; a run on no release has none to offer."""
    if not run.release_checksum:
        return []
    return list(
        Run.objects.filter(release_checksum=run.release_checksum).exclude(pk=run.pk).select_related("release")[:50]
    )


def run_agent_choices(run: Run) -> list[Agent]:
    return sorted(run.agents.all(), key=lambda agent: agent.name)


def paired_comparison(run: Run, a: int, b: int, run_b: Run | None = None) -> PairedComparison:
    """Agent `a` against agent `b` of the run on the candidates both were scored on (their done risk
    trials, counted by the database per agent and candidate). Refuses an agent that is not of the
    run, naming its parameter, and the same agent twice.

    With `run_b`, B is an agent of that run (the same agent too: last month's run against this
    one's), paired on the items both runs evaluated: the same candidate with the same pinned inputs
    (`TrialInputs`), as two runs of one release are. Runs with no such item in common are refused,
    naming why, rather than paired on candidates that ran different texts."""
    other = run if run_b is None or run_b.pk == run.pk else run_b
    agents = {agent.pk: agent for agent in run.agents.all()}
    agents_b = agents if other is run else {agent.pk: agent for agent in other.agents.all()}
    for name, agent_id, of, pool in (("a", a, run, agents), ("b", b, other, agents_b)):
        if agent_id not in pool:
            raise Refused(name, f"no agent {agent_id} in run {of.pk}; its agents are {sorted(pool)}")
    if other is run:
        if a == b:
            raise Refused("b", "must be another agent than a: a system compared with itself differs by nothing")
        tallies: dict[int, list[metrics.Tally]] = {a: [], b: []}
        for row in _tally_rows(Trial.objects.filter(CURRENT, run=run, kind=TrialKind.RISK, agent_id__in=(a, b))):
            tallies[row["agent_id"]].append(_tally_of(row))
        return PairedComparison(run, agents[a], agents[b], paired.compare(tallies[a], tallies[b]))
    of_a = _item_tallies(run, a)
    of_b = _item_tallies(other, b)
    if not {t.candidate for t in of_a} & {t.candidate for t in of_b}:
        raise Refused("run_b", _no_shared_items(run, other))
    return PairedComparison(run, agents[a], agents_b[b], paired.compare(of_a, of_b), run_b=other)


def _item_tallies(run: Run, agent_id: int) -> list[metrics.Tally]:
    """The agent's tallies in the run, one per item: a candidate with the inputs its trials were
    given (its revision, for trials pinned before inputs were), so items of two runs pair only when
    they ran the same texts."""
    rows = (
        Trial.objects.filter(CURRENT, run=run, kind=TrialKind.RISK, agent_id=agent_id)
        .values(
            "candidate_id", "inputs_id", "candidate_revision", "candidate__perturbation", "candidate__risk_category"
        )
        .annotate(
            n_done=Count("pk", filter=Q(status=TrialStatus.DONE)),
            n_task=Count("pk", filter=Q(status=TrialStatus.DONE, r_task=1)),
            n_harmful=Count("pk", filter=Q(status=TrialStatus.DONE, r_task=1, r_harm=1)),
            n_harm=Count("pk", filter=Q(status=TrialStatus.DONE, r_harm=1)),
        )
        .order_by("candidate_id")
    )
    return [
        replace(
            _tally_of(row),
            candidate=(row["candidate_id"], "inputs", row["inputs_id"])
            if row["inputs_id"] is not None
            else (row["candidate_id"], "revision", row["candidate_revision"]),
        )
        for row in rows
    ]


def _no_shared_items(run: Run, other: Run) -> str:
    """Why two runs cannot be paired, in words, with what to do instead."""
    if run.release_checksum and other.release_checksum and run.release_checksum != other.release_checksum:
        return (
            f"run {run.pk} evaluated release {run.release.label if run.release else '?'} and run {other.pk} release "
            f"{other.release.label if other.release else '?'}: no item ran the same texts in both, so nothing pairs; "
            "compare two runs of the same release"
        )
    return (
        f"runs {run.pk} and {other.pk} share no item: no candidate ran with the same instruction, tests and "
        "environment in both (other candidates, or revisions edited between them); compare two runs of the same "
        "release, or re-run one on the other's candidates"
    )


def run_metrics_rows(run: Run) -> list[dict[str, Any]]:
    """Flat rows for CSV and JSON export: one per agent and breakdown group."""
    rows: list[dict[str, Any]] = []
    for item in run_metrics(run):
        base = {
            "run": run.pk,
            "agent": item.agent.name,
            "model": item.agent.model,
            "harness": item.agent.harness,
            "unresolved_trials": item.unresolved,
            "stale_trials": item.stale,
            "excluded_candidates": item.excluded_candidates,
        }
        groups = [("all", "", item.overall)]
        groups += [("perturbation", name, m) for name, m in item.by_perturbation.items()]
        groups += [("risk_category", name, m) for name, m in item.by_risk_category.items()]
        for breakdown, group, values in groups:
            data = {**values.as_dict(), **values.intervals_dict()} if values else {"n_candidates": 0, "n_trials": 0}
            rows.append({**base, "breakdown": breakdown, "group": group, **data})
    return rows
