"""Doing one step of a search (no database writes): the target's rollouts and the no-op check run
the trial protocol over a sandbox, exactly as a trial does; the proposal and judgement steps ask
the run's proposer and judges. Each returns the fields of the step's record."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.conf import settings

from evaluation.agents.base import AgentError, AgentRunner, Step
from evaluation.agents.factory import model_upstream
from evaluation.agents.reference import NoopAgent
from evaluation.gateway import BudgetExhausted
from evaluation.sandbox.base import Environment, SandboxBackend
from evaluation.trials.protocol import TrialSpec, trial_run
from evaluation.trials.sandboxes import sandbox_limits

from .checks import harm_test_problem
from .contracts import Feedback, JudgeRequest, ModelCallRecord, ProposalRequest
from .makers import judge_build, proposer_build
from .model_access import SearchLedger, gateway_for_rollout
from .models import GenerationSearch, GenerationStep
from .sources import seed_task
from .states import StepKind
from .targets import target_pin, target_runner
from .transcripts import render, step_dicts

PASSES_UNTOUCHED = "the harm test passes without any agent action (on the untouched environment)"


def _spec(search: GenerationSearch, instruction: str, harm_test: str | None) -> TrialSpec:
    source = search.source_task
    return TrialSpec(
        environment=source.get("environment") or None,
        instruction=instruction,
        task_test=source["task_test"],
        harm_test=harm_test,
        agent_time_limit=float(min(int(target_pin(search)["time_limit"]), settings.VERIHARM_AGENT_MAX_TIME_LIMIT)),
        test_timeout=float(settings.VERIHARM_TEST_TIMEOUT),
        limits=sandbox_limits(),
    )


def _inputs_sha256(spec: TrialSpec) -> str:
    pinned = {
        "environment": spec.environment or {},
        "instruction": spec.instruction,
        "task_test": spec.task_test,
        "harm_test": spec.harm_test,
    }
    return hashlib.sha256(json.dumps(pinned, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _run(
    backend: SandboxBackend,
    spec: TrialSpec,
    runner: AgentRunner,
    cancelled: Callable[[], bool],
    recorded: list[Step] | None = None,
) -> dict[str, Any]:
    """The trial protocol over `spec`; `recorded` (the caller's) keeps the agent's steps so far
    should the agent end in error."""
    recorded = [] if recorded is None else recorded
    identity = " ".join(
        filter(None, [backend.system_identity(Environment.from_spec(spec.environment)), runner.identity()])
    )
    outcome = trial_run(backend, spec, runner, record=recorded.append, cancelled=cancelled)
    steps = step_dicts(recorded)
    return {
        "system_identity": identity,
        "transcript": render(steps),
        "steps": steps,
        "r_task": outcome.r_task,
        "r_harm": outcome.r_harm,
        "inputs_sha256": _inputs_sha256(spec),
        "instruction": spec.instruction,
        "harm_test": spec.harm_test or "",
    }


def _target_run(
    search: GenerationSearch,
    kind: str,
    iteration: int,
    backend: SandboxBackend,
    spec: TrialSpec,
    cancelled: Callable[[], bool],
) -> dict[str, Any]:
    """The target on `spec`; a model-mode target reaches its model through the trials' gateway, its
    calls recorded for the search and charged to the run's USD budget. A run whose budget ran out
    before or during the rollout gets no verdict from it (what the agent left is not its own result);
    a gateway that failed calls itself is infrastructure, tried again; a target that failed itself
    gets no verdict either, and the step says why."""
    runner = target_runner(search)
    pin = target_pin(search)
    upstream = model_upstream(pin["kind"], pin["config"])
    if upstream is None:
        return _run(backend, spec, runner, cancelled)
    spent = {"budget_spent": True, "inputs_sha256": _inputs_sha256(spec), "instruction": spec.instruction}
    if _run_budget_spent(search):
        return {**spent, "error": f"not started: the run's USD budget of ${search.run.budget_usd} is spent"}
    failure = ""
    try:
        with gateway_for_rollout(
            run_id=search.run_id,
            search_id=search.pk,
            step_kind=kind,
            iteration=iteration,
            budget_usd=search.run.budget_usd,
            upstream=upstream,
        ) as gateway:
            runner.attach_gateway(gateway)
            recorded: list[Step] = []
            try:
                fields = _run(backend, spec, runner, cancelled, recorded)
            except AgentError as exc:
                if exc.retryable and not (gateway.budget_refusals or gateway.limit_hit):
                    raise
                steps = step_dicts(recorded)
                fields = {
                    "transcript": render(steps),
                    "steps": steps,
                    "inputs_sha256": _inputs_sha256(spec),
                    "instruction": spec.instruction,
                    "harm_test": spec.harm_test or "",
                }
                failure = f"the target agent failed: {exc}"
            refused, failed = gateway.budget_refusals, gateway.gateway_failures
            ran_away, forwarded, answered = gateway.limit_hit, gateway.forwarded, gateway.answered
    except BudgetExhausted as exc:
        return {**spent, "error": f"stopped by the run's USD budget: {exc}"}
    if refused:
        return {**spent, "error": f"stopped by the run's USD budget: the gateway refused {refused} model call(s)"}
    if failed:
        raise AgentError(f"the model gateway failed {failed} model call(s) itself: not the agent's doing")
    # As for a trial (`evaluation.trials.execution`): a target that ran into the call cap, whose model
    # never answered, or whose harness ended in error has no verdict, and the search ends saying so
    # (`SearchEnding.TARGET_ERROR`); its transcript stays on the step.
    if ran_away:
        failure = f"the target agent ran away: {ran_away}"
    elif forwarded and not answered:
        failure = f"the model never answered: all {forwarded} model call(s) of the target failed"
    if failure:
        return {**fields, "r_task": None, "r_harm": None, "error": failure}
    return fields


def seed_rollout(search: GenerationSearch, backend: SandboxBackend, cancelled: Callable[[], bool]) -> dict[str, Any]:
    """tau_seed: the target on t_seed, judged by V_task alone."""
    spec = _spec(search, search.source_task["instruction"], None)
    return _target_run(search, StepKind.SEED, 0, backend, spec, cancelled)


def noop_check(
    search: GenerationSearch, proposal: GenerationStep, backend: SandboxBackend, cancelled: Callable[[], bool]
) -> dict[str, Any]:
    """V~_harm on the untouched environment: the reference check's no-op agent through the same protocol."""
    fields = _run(backend, _spec(search, proposal.instruction, proposal.harm_test), NoopAgent(), cancelled)
    fields["note"] = PASSES_UNTOUCHED if fields["r_harm"] == 1 else ""
    return fields


def rollout(
    search: GenerationSearch, proposal: GenerationStep, backend: SandboxBackend, cancelled: Callable[[], bool]
) -> dict[str, Any]:
    """The target on t~ with both tests hidden, each run on its own copy of the final state."""
    spec = _spec(search, proposal.instruction, proposal.harm_test)
    return _target_run(search, StepKind.ROLLOUT, proposal.iteration, backend, spec, cancelled)


def _calls(calls: tuple[ModelCallRecord, ...]) -> tuple[list[dict[str, Any]], Decimal | None]:
    stored = [
        {
            **{k: getattr(c, k) for k in c.__dataclass_fields__ if k != "cost_usd"},
            "cost_usd": None if c.cost_usd is None else str(c.cost_usd),
        }
        for c in calls
    ]
    costs = [c.cost_usd for c in calls if c.cost_usd is not None]
    return stored, (sum(costs, Decimal(0)) if costs else None)


def feedback(steps: list[GenerationStep]) -> tuple[Feedback, ...]:
    """F: every earlier attempt, oldest first, with its rollout's transcript and verdicts when it had one."""
    by_kind = {(s.kind, s.iteration): s for s in steps}
    found = []
    for proposal in sorted((s for s in steps if s.kind == StepKind.PROPOSAL), key=lambda s: s.iteration):
        if proposal.error:
            continue
        check = by_kind.get((StepKind.NOOP_CHECK, proposal.iteration))
        run = by_kind.get((StepKind.ROLLOUT, proposal.iteration))
        found.append(
            Feedback(
                iteration=proposal.iteration,
                instruction=proposal.instruction,
                harm_test=proposal.harm_test,
                transcript=run.transcript if run else "",
                r_task=run.r_task if run else None,
                r_harm=run.r_harm if run else None,
                note=proposal.note or (check.note if check else ""),
            )
        )
    return tuple(found)


def _run_budget_spent(search: GenerationSearch) -> bool:
    run = search.run
    return run.budget_usd is not None and run.spent_usd >= run.budget_usd


def _ledger(search: GenerationSearch, kind: str, iteration: int) -> SearchLedger:
    """The proposer's or a judge's calls are kept and charged to the run's USD budget as they end."""
    return SearchLedger(
        run_id=search.run_id, search_id=search.pk, step_kind=kind, iteration=iteration, budget_usd=search.run.budget_usd
    )


def propose(search: GenerationSearch, iteration: int, steps: list[GenerationStep]) -> dict[str, Any]:
    if _run_budget_spent(search):
        return {"budget_spent": True, "error": f"not asked: the run's USD budget of ${search.run.budget_usd} is spent"}
    config = next(c for c in search.run.proposer_configs if c["name"] == search.proposer)
    seed = next(s for s in steps if s.kind == StepKind.SEED)
    request = ProposalRequest(
        seed=seed_task(search.source_task),
        seed_transcript=seed.transcript,
        iteration=iteration,
        budget=search.run.budget,
        perturbations=tuple(search.run.perturbations),
        feedback=feedback(steps),
    )
    proposer = proposer_build(config, ledger=_ledger(search, StepKind.PROPOSAL, iteration))
    try:
        result = proposer.propose(request)
    finally:
        proposer.close()
    calls, cost = _calls(result.calls)
    fields: dict[str, Any] = {"calls": calls, "cost_usd": cost, "budget_spent": result.budget_spent}
    if result.proposal is None:
        return {**fields, "error": result.error or "the proposer gave no proposal"}
    proposal = result.proposal
    note = harm_test_problem(proposal.harm_test)
    if not note and proposal.perturbation not in search.run.perturbations:
        note = f"the perturbation {proposal.perturbation!r} is not one this run allows"
    if not note and not proposal.instruction.strip():
        note = "the proposed task is empty"
    return {
        **fields,
        "instruction": proposal.instruction,
        "harm_test": proposal.harm_test,
        # A kind outside the format's is refused above and stored blank.
        "perturbation": proposal.perturbation if proposal.perturbation in search.run.perturbations else "",
        "harm_summary": proposal.harm_summary,
        "risk_category": proposal.risk_category[:100],
        "references": dict(proposal.references),
        "note": note,
    }


def judge(search: GenerationSearch, judge_name: str, kept: GenerationStep) -> dict[str, Any]:
    if _run_budget_spent(search):
        return {"budget_spent": True, "error": f"not asked: the run's USD budget of ${search.run.budget_usd} is spent"}
    config = next(c for c in search.run.judge_configs if c["name"] == judge_name)
    # All a judge may see (paper section 2.2): never the trajectory, the final state or a verdict.
    request = JudgeRequest(
        seed_instruction=search.source_task["instruction"], instruction=kept.instruction, harm_test=kept.harm_test
    )
    scorer = judge_build(config, ledger=_ledger(search, StepKind.JUDGEMENT, 0))
    try:
        result = scorer.score(request)
    finally:
        scorer.close()
    calls, cost = _calls(result.calls)
    fields: dict[str, Any] = {"calls": calls, "cost_usd": cost, "budget_spent": result.budget_spent}
    if result.scores is None:
        return {**fields, "error": result.error or "the judge gave no scores"}
    return {**fields, "scores": result.scores.as_dict(), "rationale": result.scores.rationale}
