"""Launching, re-running and cancelling runs: candidates x agents x repetitions, one task per trial."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from candidates.models import Candidate
from evaluation import queue
from evaluation.agents.sandbox_status import runtimes_of, sandbox_status
from evaluation.model_ledger.budgets import budget_usd_parse
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.selection import Pinned, SelectionError, pinned_for_selection, release_candidates
from evaluation.trials import pinning
from evaluation.v3ast import twins
from veriharm_site.refusals import Refused

from ..agents.factory import model_upstream
from ..agents.pinning import agent_pin_sha256
from ..agents.reference import SCRIPTS
from ..models import (
    LAUNCHABLE_BACKENDS,
    Agent,
    AgentKind,
    Backend,
    DemoRun,
    Protocol,
    Run,
    Trial,
    TrialKind,
    TrialStatus,
)
from ..sandbox.network import HOST_NETWORK_REFUSED
from .agents import reference_agents_ensure
from .refusals import LaunchRefused

MAX_REPETITIONS = 100
# V3AST-Bench retains four risk and four twin runs per task and system (appendix C.3).
DEFAULT_REPETITIONS = {Protocol.VERIHARM: 1, Protocol.V3AST: 4}


def default_backend() -> str:
    return settings.VERIHARM_SANDBOX_BACKEND


def enqueue_trials(trial_ids: list[int], backend: str) -> None:
    # After commit: a worker must find the trial rows when it picks the task up. Each to the queue
    # of the workers that have the run's sandbox backend.
    transaction.on_commit(lambda: queue.trials_publish([(pk, backend) for pk in trial_ids]))


def _reference_script(agent: Agent) -> str | None:
    return agent.config.get("script") if agent.kind == AgentKind.REFERENCE else None


def _slots(pinned: pinning.PinnedCandidate, agent: Agent, kind: str, repetitions: int) -> list[Trial]:
    inputs = pinning.inputs_store(pinning.parts_for(pinned, kind))
    config = pinning.trial_agent_pin(agent, kind, pinned.references)
    config_sha256 = agent_pin_sha256(config)
    return [
        Trial(
            candidate_id=pinned.candidate_id,
            agent=agent,
            kind=kind,
            repetition=repetition,
            candidate_revision=pinned.revision,
            inputs=inputs,
            agent_config=config,
            agent_config_sha256=config_sha256,
        )
        for repetition in range(1, repetitions + 1)
    ]


def _inputs_digest(slot: Trial) -> str:
    assert slot.inputs is not None  # _slots makes every slot with its inputs
    return slot.inputs.digest


def _host_network_refusals(candidates: list[pinning.PinnedCandidate]) -> list[str]:
    """Candidates whose environment asks for network: refused at launch, never run without it."""
    asking = [
        c.external_id
        for c in candidates
        if (c.record.get("source_task") or {}).get("environment", {}).get("network") is True
    ]
    if not asking:
        return []
    shown = ", ".join(asking[:10]) + (f" and {len(asking) - 10} more" if len(asking) > 10 else "")
    return [f"environment.network is true for {shown}: {HOST_NETWORK_REFUSED}; leave them out of the selection"]


def _create_run(
    *,
    candidates: list[pinning.PinnedCandidate],
    agents: list[Agent],
    repetitions: int,
    backend: str,
    created_by: Any,
    selection: dict[str, Any],
    name: str,
    test_timeout: int,
    protocol: str = Protocol.VERIHARM,
    rerun_of: Run | None = None,
    release: Any = None,
    budget_usd: Decimal | None = None,
) -> Run:
    refused = _host_network_refusals(candidates)
    if refused:
        raise LaunchRefused(refused)
    skipped: dict[str, int] = {}
    twinless: dict[str, int] = {}
    slots: list[Trial] = []
    for candidate in candidates:
        for agent in agents:
            script = _reference_script(agent)
            # Only the candidate's own scripts can be missing; the no-op needs none.
            if script in SCRIPTS and not candidate.references.get(script):
                skipped[agent.name] = skipped.get(agent.name, 0) + 1
                continue
            slots += _slots(candidate, agent, TrialKind.RISK, repetitions)
            if protocol != Protocol.V3AST:
                continue
            if candidate.twin and twins.twin_runnable(agent.kind, candidate.references, agent.config):
                slots += _slots(candidate, agent, TrialKind.TWIN, repetitions)
            else:
                twinless[agent.name] = twinless.get(agent.name, 0) + 1
    if not slots:
        raise LaunchRefused(
            ["nothing to run: none of the selected candidates has the reference scripts these agents need"]
        )
    notes = [f"{agent}: {n} candidate(s) without that reference script were left out" for agent, n in skipped.items()]
    notes += [
        f"{agent}: {n} candidate(s) without a runnable capability twin: their risk runs are labelled, "
        "but they are never eligible"
        for agent, n in twinless.items()
    ]
    external_ids = {c.candidate_id: c.external_id for c in candidates}
    run = Run.objects.create(
        name=name,
        created_by=created_by if getattr(created_by, "pk", None) else None,
        backend=backend,
        protocol=protocol,
        repetitions=repetitions,
        selection=selection,
        test_timeout=test_timeout,
        notes="\n".join(notes),
        rerun_of=rerun_of,
        release=release,
        budget_usd=budget_usd,
        release_checksum=release.checksum if release is not None else "",
        inputs_sha256=pinning.run_inputs_sha256(
            (external_ids[t.candidate_id], t.candidate_revision, t.kind, _inputs_digest(t), t.agent_config_sha256)
            for t in slots
        ),
    )
    run.agents.set(agents)
    for trial in slots:
        trial.run = run
    created = Trial.objects.bulk_create(slots, batch_size=2000)
    enqueue_trials([t.pk for t in created], run.backend)
    return run


def _check_protocol(protocol: Any, repetitions: Any, errors: list[str]) -> tuple[str, Any]:
    """The protocol, and the repetitions with that protocol's default when none were given."""
    if protocol in (None, ""):
        protocol = Protocol.VERIHARM
    if protocol not in Protocol.values:
        errors.append(f"protocol must be one of {', '.join(Protocol.values)}, got {protocol!r}")
        protocol = Protocol.VERIHARM
    return protocol, DEFAULT_REPETITIONS[protocol] if repetitions in (None, "") else repetitions


def _check_common(
    agent_ids: Iterable[int], repetitions: Any, backend: str, test_timeout: Any, errors: list[str]
) -> tuple[list[Agent], int, int]:
    wanted = list(dict.fromkeys(int(a) for a in agent_ids))
    agents = list(Agent.objects.filter(pk__in=wanted))
    if not wanted:
        errors.append("choose at least one agent")
    missing = sorted(set(wanted) - {a.pk for a in agents})
    if missing:
        errors.append(f"no agent with id {', '.join(map(str, missing))}")
    inactive = [a.name for a in agents if not a.active]
    if inactive:
        errors.append(f"agent(s) {', '.join(inactive)} are inactive")
    try:
        repetitions = int(repetitions)
    except (TypeError, ValueError):
        repetitions = 0
    if not 1 <= repetitions <= MAX_REPETITIONS:
        errors.append(f"repetitions must be between 1 and {MAX_REPETITIONS}")
    if backend not in LAUNCHABLE_BACKENDS:
        # An imported run's trials ran in another harness: re-running it here names that.
        errors.append(f"backend must be one of {', '.join(LAUNCHABLE_BACKENDS)}, got {backend!r}")
    else:
        # Before the sandbox system is built every trial would only fail its attempts. The status is
        # that of the local tree and the harness runtimes these agents run; a docker backend's image
        # lives on the workers' Docker hosts, which a container deployment prepares before starting
        # them (docs/deployment.md).
        waits = settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX and backend == Backend.LOCAL
        status = sandbox_status(runtimes_of(agents)) if waits else None
        if status is not None and not status.ready:
            errors.append(status.refusal(backend))
    try:
        test_timeout = int(test_timeout)
    except (TypeError, ValueError):
        test_timeout = 0
    if not 1 <= test_timeout <= 3600:
        errors.append("the test timeout must be between 1 and 3600 seconds")
    agents.sort(key=lambda a: wanted.index(a.pk))
    return agents, repetitions, test_timeout


def _check_budget(budget: Any, agents: list[Agent], errors: list[str]) -> Decimal | None:
    """The run's budget in USD (None: none; its range is `model_ledger.budgets`'). With one, every
    agent that calls a model must have a price for its model, or its calls could not be counted
    against it."""
    try:
        value = budget_usd_parse(budget)
    except Refused as refused:
        errors.append(refused.message)
        return None
    if value is None:
        return None
    for agent in agents:
        try:
            upstream = model_upstream(agent.kind, agent.config)
        except ValueError:
            continue  # the agent's own configuration problem is reported when it runs
        if upstream is None:
            continue
        model = agent.config.get("model") if agent.kind in (AgentKind.OPENAI_COMPATIBLE, AgentKind.HARNESS) else None
        if not upstream.prices or (model and upstream.price_of(model) is None):
            errors.append(
                f"agent {agent.name} has no price for {model or 'its models'} in its price table: "
                "a budget cannot count its calls"
            )
    return value


def run_launch(
    *,
    selection: dict[str, Any],
    agent_ids: Iterable[int],
    repetitions: Any = None,
    backend: str | None = None,
    created_by: Any = None,
    name: str = "",
    test_timeout: Any = None,
    protocol: str | None = None,
    budget_usd: Any = None,
) -> Run:
    """Create a run (candidates x agents x repetitions) and enqueue one task per trial on commit.

    Under the V3AST protocol each candidate's capability twin runs beside it, as many times;
    repetitions default to 4 there and to 1 otherwise. Raises LaunchRefused naming every
    problem; nothing is written then.
    """
    errors: list[str] = []
    backend = backend or default_backend()
    test_timeout = settings.VERIHARM_TEST_TIMEOUT if test_timeout in (None, "") else test_timeout
    protocol, repetitions = _check_protocol(protocol, repetitions, errors)
    agents, repetitions, test_timeout = _check_common(agent_ids, repetitions, backend, test_timeout, errors)
    budget = _check_budget(budget_usd, agents, errors)
    pinned: Pinned | None = None
    try:
        pinned = pinned_for_selection(selection)
    except SelectionError as exc:
        errors.append(str(exc))
    if errors or pinned is None:
        raise LaunchRefused(errors)
    with transaction.atomic():
        return _create_run(
            candidates=pinned.candidates,
            agents=agents,
            repetitions=repetitions,
            backend=backend,
            created_by=created_by,
            selection=selection,
            name=name.strip(),
            test_timeout=test_timeout,
            protocol=protocol,
            release=pinned.release,
            budget_usd=budget,
        )


def run_rerun(run: Run, *, created_by: Any = None, backend: str | None = None) -> Run:
    """Re-evaluate a whole run as a new run; the old trials stay as history.

    A run on a release evaluates the same frozen records again; any other run evaluates its
    candidates at their current revision (the run page says which trials that makes stale)."""
    candidate_ids = list(run.trials.order_by("candidate_id").values_list("candidate_id", flat=True).distinct())
    errors: list[str] = []
    agents, repetitions, test_timeout = _check_common(
        run.agents.values_list("pk", flat=True), run.repetitions, backend or run.backend, run.test_timeout, errors
    )
    if not candidate_ids:
        errors.append("this run has no trials to re-run")
    if errors:
        raise LaunchRefused(errors)
    if run.release is not None:  # no query when release_id is None
        candidates = [c for c in release_candidates(run.release) if c.candidate_id in set(candidate_ids)]
    else:
        candidates = pinning.live_candidates(candidate_ids)
    with transaction.atomic():
        return _create_run(
            candidates=candidates,
            agents=agents,
            repetitions=repetitions,
            backend=backend or run.backend,
            created_by=created_by,
            selection={"kind": "rerun", "run": run.pk, "of": run.selection},
            name=f"Re-run of {run}",
            test_timeout=test_timeout,
            protocol=run.protocol,
            rerun_of=run,
            release=run.release,
            budget_usd=run.budget_usd,
        )


def candidate_rerun(
    candidate: Candidate,
    *,
    created_by: Any = None,
    agent_ids: Iterable[int] | None = None,
    repetitions: int = 1,
    backend: str | None = None,
) -> Run:
    """Re-evaluate one candidate with the agents that evaluated it before (or the reference agents).

    When a reference agent is among them, all of them come along, the no-op included, so the
    re-evaluated revision gets a complete reference check.
    """
    if agent_ids is None:
        before = list(
            Agent.objects.filter(trials__candidate=candidate).distinct().order_by("pk").values_list("pk", "kind")
        )
        agent_ids = [pk for pk, _ in before]
        if not before or any(kind == AgentKind.REFERENCE for _, kind in before):
            agent_ids = list(dict.fromkeys(agent_ids + [a.pk for a in reference_agents_ensure()]))
    errors: list[str] = []
    agents, repetitions, test_timeout = _check_common(
        agent_ids, repetitions, backend or default_backend(), settings.VERIHARM_TEST_TIMEOUT, errors
    )
    if errors:
        raise LaunchRefused(errors)
    with transaction.atomic():
        return _create_run(
            candidates=pinning.live_candidates([candidate.pk]),
            agents=agents,
            repetitions=repetitions,
            backend=backend or default_backend(),
            created_by=created_by,
            selection={"kind": "ids", "ids": [candidate.external_id]},
            name=f"Re-evaluation of {candidate.external_id}",
            test_timeout=test_timeout,
        )


def run_cancel(run: Run) -> int:
    """Cancel a run: queued trials end now, running ones stop at their next step. Returns how many ended now."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.cancelled_at is None:
            locked.cancelled_at = timezone.now()
            locked.save(update_fields=["cancelled_at"])
        run.cancelled_at = locked.cancelled_at
        return Trial.objects.filter(run=run, status=TrialStatus.QUEUED).update(
            status=TrialStatus.CANCELLED,
            end=TrialEnd.CANCELLED,
            finished_at=timezone.now(),
            error="cancelled before it started",
        )


def run_mark_demo(run: Run, kind: str) -> Run:
    """Say what is synthetic about a run the demo launched (`models.DemoRun`), for its pages."""
    if kind not in DemoRun.values:
        raise ValueError(f"unknown demo kind {kind!r}")
    Run.objects.filter(pk=run.pk).update(demo=kind)
    run.demo = kind
    return run
