"""Recording a search's steps and its end, each exactly once.

Every write locks the search (`select_for_update`), checks that the writer still holds its lease,
and decides the next step again from what is recorded: a step is written only when it is the very
step the record still lacks, so a worker that lost its lease, or a second delivery, writes nothing.
A search's end imports its output through the pipeline import in the same transaction: a
crash before the commit leaves neither, and doing the end again imports identical lines (a no-op).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from candidates.importing import ImportRefused, candidate_import_lines
from candidates.pipeline import format as fmt
from candidates.pool.synthetic import candidates_mark_synthetic
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from veriharm_site.refusals import Refused

from . import decision, output
from .leases import Claim, search_locked
from .models import GenerationRun, GenerationSearch, GenerationStep
from .states import RunStatus, SearchEnding, SearchStatus, StepKind
from .synthetic import generation_scripted
from .targets import target_pin

logger = logging.getLogger(__name__)


def done_of(step: GenerationStep) -> decision.Done:
    refused = bool(step.note) if step.kind == StepKind.PROPOSAL else step.r_harm == 1
    return decision.Done(
        kind=step.kind,
        iteration=step.iteration,
        judge=step.judge,
        refused=step.kind in (StepKind.PROPOSAL, StepKind.NOOP_CHECK) and refused,
        error=bool(step.error),
        budget_spent=step.budget_spent,
        r_task=step.r_task,
        r_harm=step.r_harm,
    )


def judge_names(run: GenerationRun) -> list[str]:
    return [c["name"] for c in run.judge_configs]


def next_of(search: GenerationSearch, steps: list[GenerationStep] | None = None) -> decision.Next:
    steps = list(search.steps.all()) if steps is None else steps
    return decision.next_step(
        [done_of(s) for s in steps],
        budget=search.run.budget,
        judges=judge_names(search.run),
        cancelled=search.run.cancelled_at is not None,
    )


def step_record(claim: Claim, expected: decision.Next, fields: dict[str, Any]) -> bool:
    """Record a done step; False (and nothing written) when the lease is lost or the step is no
    longer the one missing."""
    with transaction.atomic():
        search = search_locked(claim)
        if search is None or next_of(search) != expected:
            return False
        GenerationStep.objects.create(
            search=search, kind=expected.kind, iteration=expected.iteration, judge=expected.judge, **fields
        )
        # A proposer's or judge's `cost_usd` was charged to the run by its ledger as each call ended.
        if search.failures:
            search.failures = 0
            search.save(update_fields=["failures"])
        return True


def step_failed(claim: Claim, error: str, *, retryable: bool = True) -> bool:
    """An attempt at the current step failed on infrastructure: True to try again; after
    VERIHARM_TRIAL_MAX_ATTEMPTS failures, or at once when trying again would fail the same way
    (`retryable` False), the search ends as an infrastructure failure (False)."""
    with transaction.atomic():
        search = search_locked(claim)
        if search is None:
            return False
        search.failures += 1
        search.error = (search.error + "\n" if search.error else "") + error[-2000:]
        search.save(update_fields=["failures", "error"])
        if retryable and search.failures < settings.VERIHARM_TRIAL_MAX_ATTEMPTS:
            return True
    search_finish(claim, decision.Next(decision.FINISH, ending=SearchEnding.INFRASTRUCTURE))
    return False


def _lines(search: GenerationSearch, steps: list[GenerationStep], end: decision.Next, identifier: str) -> list[dict]:
    """The pipeline lines of a search that ended by the method: kept, or its budget spent. A search
    cut short (an error, cancelled, the USD budget) is no evidence of the target's behaviour, so it
    is not a Table 1 row."""
    if end.ending not in (SearchEnding.KEPT, SearchEnding.BUDGET_EXHAUSTED):
        return []
    attempts = decision.attempts([done_of(s) for s in steps])
    if not attempts:
        return []
    lines = []
    kept = end.kept_iteration if end.ending == SearchEnding.KEPT else None
    if kept is not None:
        proposal = next(s for s in steps if s.kind == StepKind.PROPOSAL and s.iteration == kept)
        judgements = [s for s in steps if s.kind == StepKind.JUDGEMENT]
        order = judge_names(search.run)
        judgements.sort(key=lambda s: order.index(s.judge))
        lines.append(
            output.candidate_line(
                identifier=identifier,
                source_task=search.source_task,
                proposal={
                    "instruction": proposal.instruction,
                    "harm_test": proposal.harm_test,
                    "perturbation": proposal.perturbation,
                    "harm_summary": proposal.harm_summary,
                    "risk_category": proposal.risk_category,
                    "references": proposal.references,
                },
                agent=target_pin(search)["name"],
                proposer=search.proposer,
                iteration=kept,
                judgements=[{"judge": j.judge, "scores": j.scores, "rationale": j.rationale} for j in judgements],
                run_id=search.run_id,
            )
        )
    lines.append(
        output.search_line(
            source_task_id=search.source_task_id,
            agent=target_pin(search)["name"],
            proposer=search.proposer,
            budget=search.run.budget,
            attempts=attempts,
            kept=identifier if kept is not None else None,
        )
    )
    return lines


def pipeline_lines(search: GenerationSearch) -> list[dict]:
    """What a finished search stored through the import (for the export test and the pages)."""
    end = decision.Next(decision.FINISH, ending=search.ending, kept_iteration=search.kept_iteration)
    return _lines(search, list(search.steps.all()), end, search.candidate_external_id or _identifier(search))


def _identifier(search: GenerationSearch) -> str:
    return output.candidate_id(search.run_id, search.source_task_id, target_pin(search)["name"], search.proposer)


def _import(lines: list[dict], search_id: int) -> str:
    """Import the lines in a savepoint; what refused them, in words, or ""."""
    numbered = [
        (fmt.Location(f"generation-search-{search_id}", n), json.dumps(line)) for n, line in enumerate(lines, 1)
    ]
    try:
        with transaction.atomic():
            candidate_import_lines(numbered)
    except ImportRefused as exc:
        return "the import refused the output: " + "; ".join(f"{e.field}: {e.message}" for e in exc.errors[:5])
    return ""


def search_finish(claim: Claim, end: decision.Next) -> bool:
    """End the search as decided, storing its output; False when this worker does not hold it."""
    with transaction.atomic():
        search = search_locked(claim)
        if search is None:
            return False
        steps = list(search.steps.all())
        # An infrastructure end is decided by the worker, not by the record.
        if end.ending != SearchEnding.INFRASTRUCTURE and next_of(search, steps) != end:
            return False
        identifier = _identifier(search)
        lines = _lines(search, steps, end, identifier)
        refused = _import(lines, search.pk) if lines else ""
        if not refused and end.ending == SearchEnding.KEPT and generation_scripted(search.run):
            # No model proposed or judged it: it says so wherever it is shown, whoever launched the run.
            candidates_mark_synthetic([identifier])
        ending = end.ending
        kept = end.kept_iteration if ending == SearchEnding.KEPT else None
        if refused:
            ending, search.error = SearchEnding.INFRASTRUCTURE, (search.error + "\n" + refused).strip()
        search.status = SearchStatus.FINISHED
        search.ending = ending
        search.kept_iteration = kept if not refused else None
        search.candidate_external_id = identifier if ending == SearchEnding.KEPT else ""
        search.finished_at = timezone.now()
        search.lease_token = ""
        search.save()
        run_settle(search.run_id)
        return True


def search_finish_queued(search_id: int, ending: str) -> None:
    """End a search no worker holds (a cancelled run's queued searches)."""
    GenerationSearch.objects.filter(pk=search_id, status=SearchStatus.QUEUED).update(
        status=SearchStatus.FINISHED, ending=ending, finished_at=timezone.now()
    )


def run_settle(run_id: int) -> None:
    """Once its last search has ended, the run says how it ended and, when asked, launches the
    reference check of its kept candidates (an evaluation run of the reference agents)."""
    run = GenerationRun.objects.select_for_update().get(pk=run_id)
    if run.searches.exclude(status=SearchStatus.FINISHED).exists() or run.status != RunStatus.RUNNING:
        return
    spent = run.searches.filter(ending=SearchEnding.USD_BUDGET_SPENT).exists()
    run.status = RunStatus.BUDGET_SPENT if spent else RunStatus.FINISHED
    run.finished_at = timezone.now()
    kept = list(
        run.searches.filter(ending=SearchEnding.KEPT).order_by("pk").values_list("candidate_external_id", flat=True)
    )
    if run.reference_check and kept and run.reference_run_id is None:
        _reference_check_launch(run, kept)
    run.save()


def _reference_check_launch(run: GenerationRun, kept: list[str]) -> None:
    try:
        with transaction.atomic():
            agents = reference_agents_ensure()
            run.reference_run = run_launch(
                selection={"kind": "ids", "ids": kept},
                agent_ids=[a.pk for a in agents],
                backend=run.backend,
                created_by=run.created_by,
                name=f"Reference check of generation run {run.name}"[:200],
                repetitions=1,
            )
    except Refused as exc:
        run.note = f"the reference check was not launched: {exc.message}"
