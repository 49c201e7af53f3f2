"""What a search does next, decided from its recorded steps alone (pure).

The search is a state machine whose state is its record: a worker that resumes a search after
another died reads the steps recorded so far and continues at the first one missing, so a step
is done again only when it was never recorded. Per iteration i: the proposal, then (unless the
proposal was refused by the static check) the harm test on the untouched environment, then
(unless that check passed) the target's rollout. The first rollout with r_task = r_harm = 1 keeps
the candidate; each judge then scores it, and the search ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .states import SearchEnding, StepKind

FINISH = "finish"


@dataclass(frozen=True)
class Done:
    """A recorded step as the decision sees it."""

    kind: str
    iteration: int = 0
    judge: str = ""
    # A proposal the static check or the run's rules refused, or a check whose harm test passed untouched.
    refused: bool = False
    error: bool = False
    budget_spent: bool = False
    r_task: int | None = None
    r_harm: int | None = None


@dataclass(frozen=True)
class Next:
    kind: str  # a StepKind value, or FINISH
    iteration: int = 0
    judge: str = ""
    ending: str = ""  # with FINISH
    kept_iteration: int | None = None


def _finish(ending: str, kept: int | None = None) -> Next:
    return Next(FINISH, ending=ending, kept_iteration=kept)


def next_step(done: Sequence[Done], *, budget: int, judges: Sequence[str], cancelled: bool = False) -> Next:
    if cancelled:
        return _finish(SearchEnding.CANCELLED)
    steps = {(d.kind, d.iteration, d.judge): d for d in done}
    seed = steps.get((StepKind.SEED, 0, ""))
    if seed is None:
        return Next(StepKind.SEED)
    if seed.budget_spent:
        return _finish(SearchEnding.USD_BUDGET_SPENT)
    if seed.error:
        return _finish(SearchEnding.TARGET_ERROR)
    kept: int | None = None
    for i in range(1, budget + 1):
        proposal = steps.get((StepKind.PROPOSAL, i, ""))
        if proposal is None:
            return Next(StepKind.PROPOSAL, i)
        if proposal.budget_spent:
            return _finish(SearchEnding.USD_BUDGET_SPENT)
        if proposal.error:
            return _finish(SearchEnding.PROPOSER_ERROR)
        if proposal.refused:
            continue
        check = steps.get((StepKind.NOOP_CHECK, i, ""))
        if check is None:
            return Next(StepKind.NOOP_CHECK, i)
        if check.refused:
            continue
        rollout = steps.get((StepKind.ROLLOUT, i, ""))
        if rollout is None:
            return Next(StepKind.ROLLOUT, i)
        if rollout.budget_spent:
            return _finish(SearchEnding.USD_BUDGET_SPENT)
        if rollout.error:
            return _finish(SearchEnding.TARGET_ERROR)
        if rollout.r_task == 1 and rollout.r_harm == 1:
            kept = i
            break
    if kept is None:
        return _finish(SearchEnding.BUDGET_EXHAUSTED)
    for judge in judges:
        judgement = steps.get((StepKind.JUDGEMENT, 0, judge))
        if judgement is None:
            return Next(StepKind.JUDGEMENT, judge=judge)
        if judgement.budget_spent:
            return _finish(SearchEnding.USD_BUDGET_SPENT)
        if judgement.error:
            return _finish(SearchEnding.JUDGE_ERROR)
    return _finish(SearchEnding.KEPT, kept)


@dataclass(frozen=True)
class Attempt:
    """One iteration as the pipeline format's search record counts it."""

    iteration: int
    task_passed: bool
    harm_detected: bool


def attempts(done: Sequence[Done]) -> list[Attempt]:
    """Every iteration that got a proposal (refused ones included: the search spent the iteration),
    in order, up to the first harmful success; an errored proposal is no attempt."""
    rollouts = {d.iteration: d for d in done if d.kind == StepKind.ROLLOUT}
    found: list[Attempt] = []
    for proposal in sorted((d for d in done if d.kind == StepKind.PROPOSAL), key=lambda d: d.iteration):
        if proposal.error or proposal.budget_spent:
            break
        rollout = rollouts.get(proposal.iteration)
        passed = rollout is not None and rollout.r_task == 1
        harmed = rollout is not None and rollout.r_harm == 1
        found.append(Attempt(proposal.iteration, passed, harmed))
        if passed and harmed:
            break
    return found
