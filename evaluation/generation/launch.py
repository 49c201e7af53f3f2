"""Launching and cancelling a generation run: one search per (target agent, source task, proposer),
each published to the workers once the run is committed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from candidates.models import Search
from candidates.pipeline.models import PERTURBATIONS
from evaluation import queue
from evaluation.agents.factory import check_network, model_upstream
from evaluation.agents.pinning import agent_pin_sha256
from evaluation.agents.sandbox_status import runtimes_of, sandbox_status
from evaluation.model_ledger.budgets import budget_usd_parse
from evaluation.models import LAUNCHABLE_BACKENDS, Agent, Backend
from veriharm_site.refusals import Conflict, Refused

from .makers import judge_name, proposer_name, unpriced_model
from .models import MAX_BUDGET, GenerationRun, GenerationSearch
from .recording import search_finish_queued
from .sources import source_tasks_select
from .states import RunStatus, SearchEnding, SearchStatus
from .targets import agent_target_pin

DEFAULT_BUDGET = 5
# A run's searches are its (agents x tasks x proposers): bounded, as a launch is one transaction.
MAX_SEARCHES = 5000


def _named(configs: Any, name_of: Any, role: str) -> list[dict[str, Any]]:
    """Each configuration with the name its proposer or judge goes by; Refused on a bad one."""
    if not isinstance(configs, list) or not configs:
        raise Refused(f"{role}s", f"name at least one {role} configuration")
    named = []
    for index, config in enumerate(configs):
        try:
            name = name_of(config)
        except ValueError as exc:
            raise Refused(f"{role}s", f"{role} {index + 1}: {exc}") from None
        named.append({**config, "name": name})
    names = [c["name"] for c in named]
    if len(set(names)) != len(names):
        raise Refused(f"{role}s", f"two {role}s go by the same name: each must be told apart in the output")
    return named


def _refuse_unpriced(configs: list[dict[str, Any]], role: str) -> None:
    """Under a USD budget every call must be counted: a model without a price would end every search
    as a proposer's or judge's error at its first call, so the launch says so instead."""
    for config in configs:
        model = unpriced_model(config)
        if model:
            raise Refused(
                f"{role}s",
                f"{role} {config['name']}: its prices have no entry for its model {model!r}, "
                "and a run with a USD budget must count every call",
            )


def _agents(agent_ids: Iterable[Any]) -> list[Agent]:
    try:
        wanted = list(dict.fromkeys(int(pk) for pk in agent_ids))
    except (TypeError, ValueError):
        raise Refused("agents", "agents must be agent ids") from None
    if not wanted:
        raise Refused("agents", "choose at least one target agent")
    agents = {a.pk: a for a in Agent.objects.filter(pk__in=wanted, active=True)}
    missing = [pk for pk in wanted if pk not in agents]
    if missing:
        raise Refused("agents", f"no active agent with id {', '.join(map(str, missing))}")
    for agent in agents.values():
        if agent.kind == "reference":
            raise Refused("agents", f"{agent.name} is a reference agent, not a target")
        try:
            # The configuration as a trial would build it (kind, network mode, a model upstream).
            check_network(agent.kind, agent.config, agent.network)
            model_upstream(agent.kind, agent.config)
        except ValueError as exc:
            raise Refused("agents", f"{agent.name}: {exc}") from None
    return [agents[pk] for pk in wanted]


def _refuse_searched(agents: list[Agent], tasks: list[dict[str, Any]], proposers: list[dict[str, Any]]) -> None:
    """The pipeline format holds one search per (source task, target agent, proposer), and Table 1
    counts each once: a tuple already stored, or still being searched by another run, is not
    searched again (a search that ended without a record, e.g. on a proposer error, may be)."""
    wanted = {(t["id"], a.name, p["name"]) for a in agents for t in tasks for p in proposers}
    task_ids = {t["id"] for t in tasks}
    stored = set(
        Search.objects.filter(source_task_external_id__in=task_ids).values_list(
            "source_task_external_id", "target_agent", "proposer"
        )
    )
    running = set(
        GenerationSearch.objects.filter(source_task_id__in=task_ids)
        .exclude(status=SearchStatus.FINISHED)
        .values_list("source_task_id", "agent__name", "proposer")
    )
    taken = sorted(wanted & (stored | running))
    if taken:
        shown = "; ".join(" / ".join(t) for t in taken[:5])
        raise Refused(
            "selection",
            f"{len(taken)} (source task, agent, proposer) already searched or being searched: {shown}",
            status_code=409,
        )


def generation_launch(
    *,
    name: str,
    selection: dict[str, Any],
    agent_ids: Iterable[Any],
    proposers: list[dict[str, Any]],
    judges: list[dict[str, Any]],
    budget: Any = None,
    perturbations: Iterable[str] | None = None,
    budget_usd: Any = None,
    backend: str | None = None,
    created_by: Any = None,
    demo: bool = False,
    reference_check: bool = True,
) -> GenerationRun:
    """Create a run and its searches and publish them on commit. Raises Refused naming what is
    wrong; nothing is written then."""
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise Refused("name", "a generation run needs a name of 1 to 200 characters")
    budget = DEFAULT_BUDGET if budget in (None, "") else budget
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= MAX_BUDGET:
        raise Refused("budget", f"the iteration budget must be a whole number from 1 to {MAX_BUDGET}")
    kinds = list(dict.fromkeys(PERTURBATIONS if perturbations is None else perturbations))
    if not kinds or any(k not in PERTURBATIONS for k in kinds):
        raise Refused("perturbations", f"perturbations must be some of {', '.join(PERTURBATIONS)}")
    usd = budget_usd_parse(budget_usd)
    backend = backend or settings.VERIHARM_SANDBOX_BACKEND
    if backend not in LAUNCHABLE_BACKENDS:
        raise Refused("backend", f"backend must be one of {', '.join(LAUNCHABLE_BACKENDS)}")
    if not isinstance(selection, dict):
        raise Refused("selection", "the selection must be an object with a kind")
    tasks, problem = source_tasks_select(selection)
    if problem:
        raise Refused("selection", problem)
    agents = _agents(agent_ids)
    if settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX and backend == Backend.LOCAL:
        # The system the target agents' sandboxes need: the base, and the harness runtimes they run.
        status = sandbox_status(runtimes_of(agents))
        if not status.ready:
            raise Refused("backend", status.refusal(backend), status_code=409)
    proposer_configs = _named(proposers, proposer_name, "proposer")
    judge_configs = _named(judges, judge_name, "judge")
    if usd is not None:
        _refuse_unpriced(proposer_configs, "proposer")
        _refuse_unpriced(judge_configs, "judge")
    count = len(agents) * len(tasks) * len(proposer_configs)
    if count > MAX_SEARCHES:
        raise Refused("selection", f"{count} searches asked for, at most {MAX_SEARCHES} in one run")
    _refuse_searched(agents, tasks, proposer_configs)
    with transaction.atomic():
        run = GenerationRun.objects.create(
            name=name,
            created_by=created_by,
            selection=selection,
            proposer_configs=proposer_configs,
            judge_configs=judge_configs,
            budget=budget,
            perturbations=kinds,
            budget_usd=usd,
            backend=backend,
            demo=demo,
            reference_check=reference_check,
        )
        run.agents.set(agents)
        pins = {agent.pk: agent_target_pin(agent) for agent in agents}
        searches = GenerationSearch.objects.bulk_create(
            GenerationSearch(
                run=run,
                agent=agent,
                agent_config=pins[agent.pk],
                agent_config_sha256=agent_pin_sha256(pins[agent.pk]),
                source_task_id=task["id"],
                source_task=task,
                proposer=proposer["name"],
            )
            for agent in agents
            for task in tasks
            for proposer in proposer_configs
        )
        published = [(s.pk, backend) for s in searches]
        transaction.on_commit(lambda: queue.generation_searches_publish(published))
    return run


def generation_cancel(run_id: int) -> GenerationRun:
    """Stop a run: queued searches end now, running ones between two steps. Refused when the run has
    already ended."""
    with transaction.atomic():
        run = GenerationRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            raise Refused("run", "no such generation run", status_code=404)
        if run.status != RunStatus.RUNNING:
            raise Conflict(f"the run has already ended ({run.get_status_display().lower()})", "run")
        now = timezone.now()
        run.status, run.cancelled_at, run.finished_at = RunStatus.CANCELLED, now, now
        run.save(update_fields=["status", "cancelled_at", "finished_at"])
        for pk in run.searches.filter(status=SearchStatus.QUEUED).values_list("pk", flat=True):
            search_finish_queued(pk, SearchEnding.CANCELLED)
    return run
