"""What a search's page reads: each iteration's proposal beside its seed, the rollouts' transcripts and
verdicts, the model calls, and the judges' scores."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from candidates.diffs import diff_cache, diffing
from candidates.diffs.diffing import SideBySide
from candidates.models import Candidate
from evaluation.results import transcript_view
from evaluation.results.transcript_view import Headline

from .contracts import CRITERIA
from .models import GenerationModelCall, GenerationRun, GenerationSearch, GenerationStep
from .prompts import render_feedback
from .states import SearchEnding, StepKind
from .steps import feedback


@dataclass(frozen=True)
class TranscriptStep:
    index: int
    kind: str
    command: str
    content: str
    exit_code: int | None
    timed_out: bool
    headline: Headline


@dataclass(frozen=True)
class Verdicts:
    """A rollout's or no-op check's (r_task, r_harm), what it ran and what it said."""

    r_task: int | None
    r_harm: int | None
    note: str
    error: str
    steps: list[TranscriptStep]
    transcript: str
    inputs_sha256: str
    system_identity: str
    target_calls: int
    target_cost_usd: Decimal | None


@dataclass(frozen=True)
class Call:
    """One proposer or judge model call as stored (`contracts.ModelCallRecord`)."""

    prompt: str
    route: str
    model: str
    status_code: int
    request_text: str
    reply_text: str
    input_tokens: int
    output_tokens: int
    cost_usd: str | None
    validation_error: str


@dataclass(frozen=True)
class Iteration:
    """The selected iteration in full: its proposal, both diffs, the feedback, the check and the rollout."""

    iteration: int
    instruction_chars: int
    harm_test: str
    perturbation: str
    harm_summary: str
    risk_category: str
    note: str
    error: str
    budget_spent: bool
    seed_diff_html: str
    seed_diff: SideBySide | None
    previous_iteration: int | None  # the proposal the previous diff compares against
    previous_diff_html: str  # "" for the first proposal, or one without a previous proposal
    previous_diff: SideBySide | None
    feedback: str  # what went to the proposer about the earlier attempts ("" for the first)
    calls: list[Call]
    cost_usd: Decimal | None
    check: Verdicts | None
    rollout: Verdicts | None
    kept: bool


@dataclass(frozen=True)
class IterationLine:
    """One iteration in the search's list: what a reader picks the iteration to read by."""

    iteration: int
    perturbation: str
    instruction_chars: int
    outcome: str  # the error, the note, or "" when it went on to a check and a rollout
    budget_spent: bool
    check: tuple[int | None, int | None] | None  # the no-op check's (r_task, r_harm)
    rollout: tuple[int | None, int | None] | None
    kept: bool
    selected: bool


@dataclass(frozen=True)
class Judgement:
    judge: str
    scores: dict[str, int] | None
    total: int | None
    rationale: str
    error: str
    calls: list[Call]
    cost_usd: Decimal | None


@dataclass(frozen=True)
class SearchPage:
    search: GenerationSearch
    run: GenerationRun
    seed_instruction: str
    seed: Verdicts | None
    # Every iteration as one line, and the selected one in full: a page reads one iteration's
    # texts, transcripts and diffs however many iterations the search has.
    iterations: list[IterationLine]
    selected: Iteration | None
    judgements: list[Judgement]
    criteria: tuple[str, ...]
    quality: float | None  # Q: the mean of the judges' sums
    candidate_stored: bool  # the kept candidate is in the pool (its page exists)
    ending_label: str
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal


def _transcript_steps(steps: list[dict[str, Any]]) -> list[TranscriptStep]:
    found = []
    for index, step in enumerate(steps, start=1):
        command, content = str(step.get("command") or ""), str(step.get("content") or "")
        exit_code = step.get("exit_code")
        found.append(
            TranscriptStep(
                index=index,
                kind=str(step.get("kind") or ""),
                command=command,
                content=content,
                exit_code=exit_code if isinstance(exit_code, int) else None,
                timed_out=bool(step.get("timed_out")),
                headline=transcript_view.headline(command, content),
            )
        )
    return found


def _verdicts(step: GenerationStep | None, calls: list[GenerationModelCall]) -> Verdicts | None:
    if step is None:
        return None
    mine = [c for c in calls if c.step_kind == step.kind and c.iteration == step.iteration]
    costs = [c.cost_usd for c in mine if c.cost_usd is not None]
    return Verdicts(
        r_task=step.r_task,
        r_harm=step.r_harm,
        note=step.note,
        error=step.error,
        steps=_transcript_steps(step.steps if isinstance(step.steps, list) else []),
        transcript=step.transcript,
        inputs_sha256=step.inputs_sha256,
        system_identity=step.system_identity,
        target_calls=len(mine),
        target_cost_usd=sum(costs, Decimal(0)) if costs else None,
    )


def _calls(step: GenerationStep) -> list[Call]:
    found = []
    for call in step.calls if isinstance(step.calls, list) else []:
        if not isinstance(call, dict):
            continue
        found.append(
            Call(
                prompt=f"{call.get('prompt_name', '')} {call.get('prompt_version', '')}".strip(),
                route=str(call.get("route", "")),
                model=str(call.get("model", "")),
                status_code=int(call.get("status_code") or 0),
                request_text=str(call.get("request_text", "")),
                reply_text=str(call.get("reply_text", "")),
                input_tokens=int(call.get("input_tokens") or 0),
                output_tokens=int(call.get("output_tokens") or 0),
                cost_usd=None if call.get("cost_usd") is None else str(call["cost_usd"]),
                validation_error=str(call.get("validation_error", "")),
            )
        )
    return found


def _diff(before: str, after: str) -> tuple[SideBySide, str]:
    """The proposed task against an earlier text, computed once per pair of texts (the cache) at
    a bounded cost (`diffing.bounded_side_by_side`)."""
    diff = diff_cache.side_by_side_cached(before, after)
    return diff, diffing.segments_html(diff.right)


class NoSuchIteration(LookupError):
    pass


def _default_iteration(search: GenerationSearch, proposals: list[GenerationStep]) -> int | None:
    """The kept iteration, or else the latest proposal: what a reader of the search comes for."""
    if search.ending == SearchEnding.KEPT and search.kept_iteration is not None:
        return search.kept_iteration
    return proposals[-1].iteration if proposals else None


def _verdict_pair(step: GenerationStep | None) -> tuple[int | None, int | None] | None:
    return None if step is None else (step.r_task, step.r_harm)


# The JSON columns a step's page shows only for the steps it shows in full (a rollout's transcript
# steps run to megabytes over a long search).
_SHOWN_ONLY = ("steps",)


def generation_search_page(search_id: int, iteration: int | None = None) -> SearchPage | None:
    """The search with every iteration as a line and one in full: `iteration`, or by default the
    kept one or the latest. Raises NoSuchIteration when the search has no proposal at `iteration`."""
    search = GenerationSearch.objects.select_related("run", "agent").filter(pk=search_id).first()
    if search is None:
        return None
    steps = list(search.steps.defer(*_SHOWN_ONLY).order_by("iteration", "pk"))
    calls = list(search.model_calls.all())
    by_kind = {(s.kind, s.iteration): s for s in steps if s.kind != StepKind.JUDGEMENT}
    seed_instruction = str(search.source_task.get("instruction", ""))
    proposals = [s for s in steps if s.kind == StepKind.PROPOSAL]
    chosen = iteration if iteration is not None else _default_iteration(search, proposals)
    if chosen is not None and (StepKind.PROPOSAL, chosen) not in by_kind:
        if iteration is not None:
            raise NoSuchIteration(iteration)
        chosen = None
    kept_iteration = search.kept_iteration if search.ending == SearchEnding.KEPT else None
    shown = [
        step
        for step in (
            by_kind.get((StepKind.SEED, 0)),
            by_kind.get((StepKind.NOOP_CHECK, chosen or 0)),
            by_kind.get((StepKind.ROLLOUT, chosen or 0)),
        )
        if step is not None
    ]
    transcripts = dict(GenerationStep.objects.filter(pk__in=[s.pk for s in shown]).values_list("pk", "steps"))
    for step in shown:
        step.steps = transcripts.get(step.pk, [])
    lines = []
    for proposal in proposals:
        check = by_kind.get((StepKind.NOOP_CHECK, proposal.iteration))
        lines.append(
            IterationLine(
                iteration=proposal.iteration,
                perturbation=proposal.perturbation,
                instruction_chars=len(proposal.instruction),
                outcome=proposal.error or proposal.note or (check.note if check else ""),
                budget_spent=proposal.budget_spent,
                check=_verdict_pair(check),
                rollout=_verdict_pair(by_kind.get((StepKind.ROLLOUT, proposal.iteration))),
                kept=proposal.iteration == kept_iteration,
                selected=proposal.iteration == chosen,
            )
        )
    selected = None
    if chosen is not None:
        proposal = by_kind[(StepKind.PROPOSAL, chosen)]
        earlier = [s for s in steps if s.iteration < chosen and s.kind != StepKind.JUDGEMENT]
        previous = next((p for p in reversed(proposals) if p.iteration < chosen and not p.error), None)
        told = feedback(earlier)
        seed_diff = previous_diff = None
        seed_html = previous_html = ""
        if not proposal.error:
            seed_diff, seed_html = _diff(seed_instruction, proposal.instruction)
            if previous is not None:
                previous_diff, previous_html = _diff(previous.instruction, proposal.instruction)
        selected = Iteration(
            iteration=chosen,
            instruction_chars=len(proposal.instruction),
            harm_test=proposal.harm_test,
            perturbation=proposal.perturbation,
            harm_summary=proposal.harm_summary,
            risk_category=proposal.risk_category,
            note=proposal.note,
            error=proposal.error,
            budget_spent=proposal.budget_spent,
            seed_diff_html=seed_html,
            seed_diff=seed_diff,
            previous_iteration=previous.iteration if previous is not None else None,
            previous_diff_html=previous_html,
            previous_diff=previous_diff,
            feedback=render_feedback(told) if told else "",
            calls=_calls(proposal),
            cost_usd=proposal.cost_usd,
            check=_verdicts(by_kind.get((StepKind.NOOP_CHECK, chosen)), calls),
            rollout=_verdicts(by_kind.get((StepKind.ROLLOUT, chosen)), calls),
            kept=chosen == kept_iteration,
        )
    order = [c.get("name") for c in search.run.judge_configs]
    judgement_steps = sorted(
        (s for s in steps if s.kind == StepKind.JUDGEMENT),
        key=lambda s: order.index(s.judge) if s.judge in order else len(order),
    )
    judgements = []
    for step in judgement_steps:
        scores = step.scores if isinstance(step.scores, dict) else None
        total = sum(int(scores.get(k) or 0) for k in CRITERIA) if scores else None
        judgements.append(Judgement(step.judge, scores, total, step.rationale, step.error, _calls(step), step.cost_usd))
    totals = [j.total for j in judgements if j.total is not None]
    stored_calls = [c for s in steps for c in _calls(s)]
    costs = [s.cost_usd for s in steps if s.cost_usd is not None] + [
        c.cost_usd for c in calls if c.cost_usd is not None
    ]
    return SearchPage(
        search=search,
        run=search.run,
        seed_instruction=seed_instruction,
        seed=_verdicts(by_kind.get((StepKind.SEED, 0)), calls),
        iterations=lines,
        selected=selected,
        judgements=judgements,
        criteria=CRITERIA,
        quality=sum(totals) / len(totals) if totals else None,
        candidate_stored=bool(search.candidate_external_id)
        and Candidate.objects.filter(external_id=search.candidate_external_id).exists(),
        ending_label=SearchEnding(search.ending).label if search.ending else "",
        tokens_in=sum(c.input_tokens for c in stored_calls) + sum(c.input_tokens for c in calls),
        tokens_out=sum(c.output_tokens for c in stored_calls) + sum(c.output_tokens for c in calls),
        cost_usd=sum(costs, Decimal(0)),
    )


def proposal_text(search_id: int, iteration: int) -> str | None:
    """The proposed task t~ of one iteration as recorded, in full (None: no such proposal)."""
    return (
        GenerationStep.objects.filter(search_id=search_id, kind=StepKind.PROPOSAL, iteration=iteration)
        .values_list("instruction", flat=True)
        .first()
    )
