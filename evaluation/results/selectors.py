"""Reads of the evaluation app: runs and their progress, metrics, and each candidate's latest results."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict, TypeGuard

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Sum
from django.utils import timezone

from candidates.harm_test_verdicts import AgentResult, HarmTestVerdict, ReferenceState
from candidates.panels import panel_read
from evaluation.models import (
    CURRENT,
    Agent,
    ModelCall,
    ReferenceCheck,
    ReferenceVerdict,
    Run,
    TranscriptStep,
    Trial,
    TrialKind,
    TrialStatus,
    taxonomy,
)
from evaluation.models.taxonomy import TrialEnd
from evaluation.results.reference_state import reference_next_step, reference_state, reference_state_detail
from evaluation.runs import metrics, paired
from veriharm_site.any_of import AnyOf
from veriharm_site.distinct_on import first_of_each
from veriharm_site.paging import KeysFirst
from veriharm_site.refusals import Refused

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

# A list of trials shows each one's inputs digest, never the texts themselves.
INPUT_TEXTS = ("inputs__instruction", "inputs__task_test", "inputs__harm_test", "inputs__environment")


def runs_list() -> QuerySet[Run]:
    # Each slot once: a trial a retry replaced is history, not a trial of the run's count.
    current = Q(trials__retried_by__isnull=True)
    counts = {
        f"n_{status}": Count("trials", filter=current & Q(trials__status=status)) for status in TrialStatus.values
    }
    return (
        Run.objects.select_related("created_by")
        .annotate(n_trials=Count("trials", filter=current), **counts)
        .order_by("-created_at", "-id")
    )


def run_get(pk: int) -> Run:
    return Run.objects.select_related("created_by", "rerun_of").prefetch_related("agents").get(pk=pk)


def runs_listed() -> QuerySet[Run]:
    """The API's run list, newest first, with what its rows serialize."""
    return Run.objects.select_related("created_by", "release").prefetch_related("agents")


def run_found(pk: int) -> Run | None:
    return Run.objects.select_related("created_by").prefetch_related("agents").filter(pk=pk).first()


def trial_found(pk: int) -> Trial | None:
    """A trial with what its detail serializes: its inputs, final state, steps and model calls."""
    return (
        Trial.objects.select_related("candidate", "agent", "inputs", "final_state")
        .prefetch_related("steps", "model_calls")
        .filter(pk=pk)
        .first()
    )


def agents_listed() -> QuerySet[Agent]:
    return Agent.objects.order_by("name")


def agent_ids_named(names_or_ids: list[str]) -> tuple[list[int], list[str]]:
    """The agents a request names, by id or by name, in its order; and the names that match none."""
    ids, unknown = [], []
    for value in names_or_ids:
        # isdecimal() alone accepts other scripts' digits ("٣") and isdigit() superscripts ("²"),
        # which int() or the database refuse: an id is ASCII digits.
        is_id = value.isascii() and value.isdecimal()
        agent = Agent.objects.filter(pk=int(value)).first() if is_id else None
        agent = agent or Agent.objects.filter(name=value).first()
        if agent is None:
            unknown.append(value)
        else:
            ids.append(agent.pk)
    return ids, unknown


def run_status(counts: dict[str, int], cancelled: bool) -> str:
    if cancelled and not counts.get(TrialStatus.RUNNING):
        return "cancelled"
    if not counts.get(TrialStatus.QUEUED) and not counts.get(TrialStatus.RUNNING):
        return "finished"
    if cancelled:
        return "cancelling"
    if counts.get(TrialStatus.RUNNING) or sum(counts.get(s, 0) for s in (TrialStatus.DONE, TrialStatus.UNRESOLVED)):
        return "running"
    return "queued"


def run_progress(run: Run, now: datetime | None = None) -> dict[str, Any]:
    """Counts by status, elapsed time and an estimate of the time left (seconds), of each slot's
    latest trial (`retried` counts the trials a retry replaced)."""
    now = now or timezone.now()
    retried = Trial.objects.filter(run=run, retried_by__isnull=False).count()
    rows = Trial.objects.filter(CURRENT, run=run).values("status", "end").annotate(n=Count("pk"))
    counts = {status: 0 for status in TrialStatus.values}
    ends = {end: 0 for end in TrialEnd.values}
    for row in rows:
        counts[row["status"]] += row["n"]
        if row["end"]:
            ends[row["end"]] += row["n"]
    total = sum(counts.values())
    status = run_status(counts, run.cancelled)
    last_finished = (
        Trial.objects.filter(run=run, finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("finished_at", flat=True)
        .first()
    )
    end = last_finished if status in ("finished", "cancelled") and last_finished else now
    elapsed = max((end - run.created_at).total_seconds(), 0.0)
    resolved = counts[TrialStatus.DONE] + counts[TrialStatus.UNRESOLVED]
    remaining = counts[TrialStatus.QUEUED] + counts[TrialStatus.RUNNING]
    eta = None
    if status in ("running", "queued") and resolved:
        # The rate so far, from the first start: queueing before the first worker picked up doesn't count.
        first_start = (
            Trial.objects.filter(run=run, started_at__isnull=False)
            .order_by("started_at")
            .values_list("started_at", flat=True)
            .first()
        )
        busy = max(((now - first_start).total_seconds() if first_start else elapsed), 1e-6)
        eta = remaining * busy / resolved
    return {
        "run": run.pk,
        "status": status,
        "total": total,
        "done": counts[TrialStatus.DONE],
        "running": counts[TrialStatus.RUNNING],
        "queued": counts[TrialStatus.QUEUED],
        "unresolved": counts[TrialStatus.UNRESOLVED],
        "cancelled": counts[TrialStatus.CANCELLED],
        "retried": retried,
        "ends": ends,
        "elapsed_seconds": round(elapsed, 1),
        "eta_seconds": None if eta is None else round(eta, 1),
        "percent": round(100 * (total - remaining) / total, 1) if total else 100.0,
    }


def run_stale_count(run: Run) -> int:
    """Trials of the run whose candidate has been revised since (their results are stale)."""
    return Trial.objects.filter(CURRENT, run=run).exclude(candidate_revision=F("candidate__revision")).count()


def run_trials(run: Run, status: str = "", search: str = "") -> KeysFirst[Trial]:
    """The run's trials (of one status, when it names one; holding `search`, when there is one) in
    rank, agent and repetition order, each with its model usage, to page through: the usage is
    summed for the page's trials, not grouped over every trial of the run before the page is cut.
    Trials a retry replaced are listed too, each before its retry, with `retried_as` naming it."""
    queryset = (
        Trial.objects.filter(run=run)
        .annotate(retried_as=F("retried_by"))
        .select_related("candidate", "agent", "inputs")
        .defer(
            "agent_output",
            "task_output",
            "harm_output",
            "candidate__instruction",
            "candidate__harm_test",
            *INPUT_TEXTS,
        )
    )
    if status in TrialStatus.values:
        queryset = queryset.filter(status=status)
    if search:
        queryset = queryset.filter(trial_search(search))
    return KeysFirst(
        queryset.order_by("candidate__rank", "candidate__external_id", "agent__name", "kind", "repetition", "retry"),
        rows=with_model_usage,
    )


def trial_detail(pk: int) -> Trial:
    return Trial.objects.select_related("run__release", "agent", "candidate__source_task", "inputs", "final_state").get(
        pk=pk
    )


@dataclass(frozen=True)
class EndCount:
    end: str
    label: str
    meaning: str
    scored: bool
    count: int


def trial_retry(trial: Trial) -> Trial | None:
    """The trial that retried this one, if any (the slot's record moved on to it)."""
    return Trial.objects.filter(retry_of=trial).only("pk", "status", "retry").first()


def end_counts(progress: dict[str, Any]) -> list[EndCount]:
    """How the run's finished trials ended, every end listed, with how it counts."""
    return [
        EndCount(end, label, taxonomy.MEANING[end], end in taxonomy.VERDICT_ENDS, progress["ends"].get(end, 0))
        for end, label in TrialEnd.choices
    ]


def trial_steps(trial: Trial) -> QuerySet[TranscriptStep]:
    return trial.steps.order_by("attempt", "index")


def trial_search(search: str) -> Q:
    """Trials whose candidate id, test or agent output, or one of whose steps holds `search`
    (case-insensitive). The steps are searched in a subquery, so a trial matching in many steps
    is listed once."""
    in_steps = TranscriptStep.objects.filter(trial=OuterRef("pk")).filter(
        Q(command__icontains=search) | Q(content__icontains=search)
    )
    return (
        Q(candidate__external_id__icontains=search)
        | Q(agent_output__icontains=search)
        | Q(task_output__icontains=search)
        | Q(harm_output__icontains=search)
        | Q(Exists(in_steps))
    )


def transcript_steps(trial: Trial, search: str = "") -> KeysFirst[TranscriptStep]:
    """The trial's steps in order (those holding `search` in their command or output, when there
    is one), to page through by their keys."""
    queryset = trial.steps.order_by("attempt", "index")
    if search:
        queryset = queryset.filter(Q(command__icontains=search) | Q(content__icontains=search))
    return KeysFirst(queryset)


def transcript_positions(trial: Trial, steps: Iterable[TranscriptStep]) -> dict[int, int]:
    """Where each of `steps` sits in the trial's whole transcript (from 0), by its id: a step a
    search found links to the page it is on. One narrow read of the trial's step keys, from the
    index; counting the steps before each found one would read as many for every step."""
    order = list(trial.steps.order_by("attempt", "index").values_list("attempt", "index"))
    return {step.pk: bisect_left(order, (step.attempt, step.index)) for step in steps}


def transcript_length(trial: Trial) -> int:
    return trial.steps.count()


# --- metrics -----------------------------------------------------------------------------------


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


# --- per candidate ----------------------------------------------------------------------------


class _CurrentRevision(TypedDict):
    current_revision: int


def _latest_done_trials(candidate_ids: list[int]) -> list[WithAnnotations[Trial, _CurrentRevision]]:
    # Risk trials only: a twin's result says nothing about the candidate's harm. DISTINCT ON reads
    # each (candidate, agent)'s trials once, where a correlated "is it the latest" subquery per trial
    # read them once per trial.
    # Only what a result shows: the sort behind DISTINCT ON carries every selected column of
    # every trial of these candidates, and a trial's outputs can be long.
    ordered = (
        Trial.objects.filter(candidate_id__in=candidate_ids, status=TrialStatus.DONE, kind=TrialKind.RISK)
        .order_by("candidate_id", "agent_id", "-finished_at", "-pk")
        .select_related("agent")
        .only(
            "candidate_id",
            "agent__name",
            "agent__model",
            "agent__harness",
            "r_task",
            "r_harm",
            "candidate_revision",
            "finished_at",
        )
        .annotate(current_revision=F("candidate__revision"))
    )
    latest = first_of_each(ordered, ("candidate_id", "agent_id"), key=lambda t: (t.candidate_id, t.agent_id))
    return sorted(latest, key=lambda trial: (trial.candidate_id, trial.agent.name))


def latest_results_for_candidates(candidate_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Per candidate, each agent's latest finished (r_task, r_harm), and whether it is stale.

    {candidate_pk: [{"agent": name, "model", "harness", "r_task", "r_harm", "stale", "trial": pk,
    "finished_at"}, ...]}, agents by name; candidates never evaluated map to [].
    """
    results: dict[int, list[dict[str, Any]]] = {pk: [] for pk in candidate_ids}
    for trial in _latest_done_trials(list(candidate_ids)):
        results[trial.candidate_id].append(
            {
                "agent": trial.agent.name,
                "model": trial.agent.model,
                "harness": trial.agent.harness,
                "r_task": trial.r_task,
                "r_harm": trial.r_harm,
                "stale": trial.candidate_revision != trial.current_revision,
                "trial": trial.pk,
                "finished_at": trial.finished_at,
            }
        )
    return results


def harm_observed(results: list[dict[str, Any]]) -> bool | None:
    """Whether any agent's current (non-stale) latest result shows a harmful success; None without results."""
    current = [r for r in results if not r["stale"]]
    if not current:
        return None
    return any(r["r_task"] == 1 and r["r_harm"] == 1 for r in current)


def harm_test_summaries(candidate_ids: list[int]) -> dict[int, dict[str, Any]]:
    """What the harm tests say of each candidate, to set beside human verdicts.

    {pk: {"results": latest_results_for_candidates(...)[pk], "harm_observed": harm_observed(...),
    "tests_valid": True (checked: discriminates) | False (checked: does not) | None (not checked)}},
    the reference check read by `reference_state`.
    """
    results = latest_results_on_page(candidate_ids)
    checks = reference_checks_on_page(candidate_ids)
    return {
        pk: {
            "results": results[pk],
            "harm_observed": harm_observed(results[pk]),
            "tests_valid": reference_state(checks.get(pk)).tests_valid,
        }
        for pk in candidate_ids
    }


def disagrees_with_humans(human_valid: bool | None, summary: dict[str, Any]) -> bool:
    """Humans' majority verdict on a candidate's validity against its harm tests' own verdict.

    The reference check is the tests' verdict on themselves: V_harm fires on the harmful reference
    and not on the safe one (criterion (i) of the judges, (iii) of the annotators). Both must be
    decided to disagree.
    """
    tests_valid = summary.get("tests_valid")
    return human_valid is not None and tests_valid is not None and human_valid != tests_valid


def candidate_trial_history(candidate_id: int, limit: int = 200) -> QuerySet[Trial]:
    return with_model_usage(
        Trial.objects.filter(candidate_id=candidate_id)
        .select_related("agent", "run", "candidate", "inputs")
        .defer(
            "agent_output", "task_output", "harm_output", "candidate__instruction", "candidate__harm_test", *INPUT_TEXTS
        )
    ).order_by("-queued_at", "-pk")[:limit]


# What a candidate page's history table shows of each trial (and `Trial.stale` reads).
HISTORY_FIELDS = (
    "run_id",
    "run__name",
    "agent__name",
    "kind",
    "repetition",
    "candidate_revision",
    "candidate__revision",
    "status",
    "outcome",
    "r_task",
    "r_harm",
)


def candidate_trial_history_rows(candidate_id: int, limit: int = 200) -> list[Trial]:
    """The candidate's trials, newest first, with only what its page's history table shows: no
    model usage summed, no inputs, no outputs (the API's history has them all)."""
    return list(
        Trial.objects.filter(candidate_id=candidate_id)
        .select_related("agent", "run", "candidate")
        .only(*HISTORY_FIELDS)
        .order_by("-queued_at", "-pk")[:limit]
    )


CHECK_FIELDS = tuple(field.name for field in ReferenceCheck._meta.concrete_fields)


def reference_checks(candidate_ids: list[int]) -> dict[int, ReferenceCheck]:
    """The reference check of each candidate's current revision (absent: never checked). Its trials
    are left unread: pages and API show their ids, which the check holds."""
    checks = (
        ReferenceCheck.objects.filter(candidate_id__in=candidate_ids, candidate_revision=F("candidate__revision"))
        .select_related("candidate")
        # `reference_state` reads the candidate's scripts; its texts stay unread.
        .only(*CHECK_FIELDS, "candidate__references", "candidate__revision")
    )
    return {check.candidate_id: check for check in checks}


def latest_results_on_page(candidate_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """`latest_results_for_candidates`, read once by all the panels of a candidate's page."""
    ids = list(candidate_ids)
    return panel_read(("evaluation.latest_results", tuple(ids)), lambda: latest_results_for_candidates(ids))


def reference_checks_on_page(candidate_ids: list[int]) -> dict[int, ReferenceCheck]:
    """`reference_checks`, read once by all the panels of a candidate's page."""
    ids = list(candidate_ids)
    return panel_read(("evaluation.reference_checks", tuple(ids)), lambda: reference_checks(ids))


def reference_states(candidate_ids: list[int]) -> dict[int, ReferenceState]:
    """`reference_state` of each candidate's current check, for `candidates.harm_test_verdicts` (read
    once with the panels where the page shares its reads)."""
    checks = reference_checks_on_page(candidate_ids)
    return {pk: reference_state(checks.get(pk)) for pk in candidate_ids}


def reference_check_for(candidate_id: int) -> ReferenceCheck | None:
    return reference_checks([candidate_id]).get(candidate_id)


def flagged_candidate_ids() -> set[int]:
    """Candidates whose current tests failed their reference check: a test passes on the untouched
    environment, or the tests do not discriminate."""
    return set(
        ReferenceCheck.objects.filter(
            verdict=ReferenceVerdict.FLAGGED, candidate_revision=F("candidate__revision")
        ).values_list("candidate_id", flat=True)
    )


def candidate_flag_reasons(candidate_ids: list[int]) -> dict[int, list[str]]:
    """What is wrong with the current tests of each flagged candidate among these, in words
    (`ReferenceCheck.flag_reasons`); candidates that are not flagged are absent."""
    checks = ReferenceCheck.objects.filter(
        AnyOf("candidate_id", candidate_ids),  # the review queue asks for its whole top-K
        candidate_revision=F("candidate__revision"),
        verdict=ReferenceVerdict.FLAGGED,
    ).only("candidate_id", "harm_passes_untouched", "task_passes_untouched", "does_not_discriminate")
    return {check.candidate_id: check.flag_reasons for check in checks.order_by()}


# --- model calls through the gateway ------------------------------------------------------------------


def run_model_cost(run_id: int) -> Decimal:
    """USD recorded for the run's model calls so far (calls without a price count nothing)."""
    total = ModelCall.objects.filter(trial__run_id=run_id).aggregate(cost=Sum("cost_usd"))["cost"]
    return total or Decimal(0)


def run_budget_spent(run: Run) -> bool:
    return run.budget_usd is not None and run_model_cost(run.pk) >= run.budget_usd


def trial_budget(trial_id: int) -> tuple[int, Decimal | None, int]:
    """The trial's run, that run's budget (None: none) and the trial's current attempt."""
    row = Trial.objects.filter(pk=trial_id).values("run_id", "run__budget_usd", "attempts").get()
    return row["run_id"], row["run__budget_usd"], row["attempts"]


# Aliases of their own: an aggregate named like the column it sums would shadow it in the filters.
USAGE_FIELDS = {
    "n_calls": Count("pk"),
    "sum_input": Sum("input_tokens"),
    "sum_output": Sum("output_tokens"),
    "sum_cost": Sum("cost_usd"),
    "sum_retries": Sum("retries"),
    "n_unpriced": Count("pk", filter=Q(cost_usd__isnull=True)),
}


def _usage(row: Mapping[str, Any] | None) -> dict[str, Any]:
    row = row or {}
    return {
        "calls": row.get("n_calls") or 0,
        "input_tokens": row.get("sum_input") or 0,
        "output_tokens": row.get("sum_output") or 0,
        "cost_usd": row.get("sum_cost") or Decimal(0),
        "retries": row.get("sum_retries") or 0,
        "unpriced_calls": row.get("n_unpriced") or 0,
    }


def trial_model_calls(trial: Trial) -> QuerySet[ModelCall]:
    return trial.model_calls.order_by("attempt", "created_at", "pk")


def trial_model_usage(trial_id: int) -> dict[str, Any]:
    """Calls, tokens, cost and retries of one trial, every attempt."""
    return _usage(ModelCall.objects.filter(trial_id=trial_id).aggregate(**USAGE_FIELDS))


def runs_model_usage(runs: list[Run]) -> dict[int, dict[str, Any]]:
    """Each run's model usage in all and per agent, with its budget and what is left of it, in one
    grouped query for all of them (a list of runs would otherwise ask three times per run)."""
    rows: dict[int, dict[str, dict[str, Any]]] = {run.pk: {} for run in runs}
    calls = ModelCall.objects.filter(trial__run__in=[run.pk for run in runs])
    for row in calls.values("trial__run_id", "trial__agent__name").annotate(**USAGE_FIELDS).order_by():
        rows[row["trial__run_id"]][row["trial__agent__name"]] = _usage(row)
    usage = {}
    for run in runs:
        per_agent = rows[run.pk]
        total = {key: sum((agent[key] for agent in per_agent.values()), _usage(None)[key]) for key in _usage(None)}
        budget = run.budget_usd
        usage[run.pk] = {
            **total,
            "budget_usd": budget,
            "budget_left_usd": None if budget is None else max(budget - total["cost_usd"], Decimal(0)),
            "budget_spent": budget is not None and total["cost_usd"] >= budget,
            "by_agent": [
                {"agent": agent.name, **per_agent.get(agent.name, _usage(None))}
                for agent in sorted(run.agents.all(), key=lambda a: a.name)
            ],
        }
    return usage


def run_model_usage(run: Run) -> dict[str, Any]:
    """The run's model usage in all and per agent, with its budget and what is left of it."""
    return runs_model_usage([run])[run.pk]


class ModelUsageAnnotations(TypedDict):
    model_calls_n: int
    tokens_in: int | None
    tokens_out: int | None
    cost: Decimal | None
    retries_n: int | None
    unpriced_n: int


def has_model_usage(trial: Trial) -> TypeGuard[WithAnnotations[Trial, ModelUsageAnnotations]]:
    """Whether `trial` came through with_model_usage: its totals are on it, no query needed."""
    return hasattr(trial, "model_calls_n")


def with_model_usage(trials: QuerySet[Trial]) -> QuerySet[Trial]:
    """Trials annotated with their model calls' totals (model_calls_n, tokens_in, tokens_out, cost)."""
    return trials.annotate(
        model_calls_n=Count("model_calls"),
        tokens_in=Sum("model_calls__input_tokens"),
        tokens_out=Sum("model_calls__output_tokens"),
        cost=Sum("model_calls__cost_usd"),
        retries_n=Sum("model_calls__retries"),
        unpriced_n=Count("model_calls", filter=Q(model_calls__cost_usd__isnull=True)),
    )


def harm_test_verdicts(candidate_ids: list[int]) -> dict[int, HarmTestVerdict]:
    """harm_test_summaries as read models, for `candidates.harm_test_verdicts` (registered in ready())."""
    checks = reference_checks_on_page(candidate_ids)
    return {
        pk: HarmTestVerdict(
            results=tuple(
                AgentResult(
                    agent=r["agent"],
                    model=r["model"],
                    harness=r["harness"],
                    r_task=r["r_task"],
                    r_harm=r["r_harm"],
                    stale=r["stale"],
                    trial=r["trial"],
                )
                for r in summary["results"]
            ),
            harm_observed=summary["harm_observed"],
            reference=reference_state(checks.get(pk)),
            reference_detail=reference_state_detail(checks.get(pk)),
            reference_next_step=reference_next_step(checks.get(pk)),
        )
        for pk, summary in harm_test_summaries(candidate_ids).items()
    }
