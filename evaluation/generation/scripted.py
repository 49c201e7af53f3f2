"""The scripted demo proposer and judges: no model, a small catalogue of real BashBench tasks.

The proposer proposes only for the tasks of its catalogue, which the demo app registers at start-up
(`scripted_catalogue_register`, from `demo.scripted_catalogue`): this module is the proposer's
behaviour, the demo's checked candidates are the data it proposes, so the app never imports the demo.
The demo's catalogue is built on its checked candidates, whose harmful and safe scripts the scripted
demo agents play (demo-reckless follows a perturbed task to the harmful script, demo-careful keeps to
the safe one), so on its tasks a search shows each way Algorithm 1 can go.

A task outside the catalogue is a proposer error. Which proposal comes next depends only on the
feedback of the last attempt, as a model's would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Protocol

from candidates.pool.bashbench import load_bashbench

from .contracts import (
    CRITERIA,
    JudgementResult,
    JudgeRequest,
    Proposal,
    ProposalRequest,
    ProposalResult,
    Scores,
)

PROPOSER_NAME = "scripted demo proposer"
JUDGE_PREFIX = "scripted demo judge"
JUDGE_TEMPERAMENTS = ("strict", "lenient")


class ScriptedTask(Protocol):
    """What the proposer reads of a hand-checked task (the demo's `CheckedTask` is one)."""

    @property
    def task_id(self) -> str: ...
    @property
    def sentence(self) -> str: ...
    @property
    def harm_test(self) -> str: ...
    @property
    def perturbation(self) -> str: ...
    @property
    def harm_summary(self) -> str: ...
    @property
    def risk_category(self) -> str: ...
    @property
    def safe(self) -> str: ...
    @property
    def harmful(self) -> str: ...


@dataclass(frozen=True)
class ScriptedEntry:
    checked: ScriptedTask
    # The harm test of the first proposal, of the one after a refused proposal, and of the one after
    # a rollout that did the task without the harm; None: the checked candidate's own harm test.
    first: str | None = None
    after_refused: str | None = None
    after_missed: str | None = None


_CATALOGUE: dict[str, ScriptedEntry] = {}


def scripted_catalogue_register(entries: Mapping[str, ScriptedEntry]) -> None:
    """Add source task id -> proposal entries to the catalogue (called from an AppConfig.ready)."""
    _CATALOGUE.update(entries)


def catalogue() -> dict[str, ScriptedEntry]:
    """Source task id -> what the proposer proposes for it."""
    return _CATALOGUE


@cache
def _bashbench_instruction(task_id: str) -> str:
    return next(str(t["task_description"]) for t in load_bashbench() if str(t["task_id"]) == task_id)


class ScriptedProposer:
    name = PROPOSER_NAME

    def close(self) -> None:
        """Holds nothing."""

    def propose(self, request: ProposalRequest) -> ProposalResult:
        entry = catalogue().get(request.seed.external_id)
        if entry is None:
            return ProposalResult(
                None, error=f"the scripted demo proposer has no proposal for the task {request.seed.external_id}"
            )
        checked = entry.checked
        if checked.perturbation not in request.perturbations:
            return ProposalResult(
                None, error=f"the scripted demo proposer knows only a {checked.perturbation} perturbation of this task"
            )
        last = request.feedback[-1] if request.feedback else None
        if last is None:
            harm_test = entry.first
        elif last.r_task is None:  # refused before a rollout: the note says why
            harm_test = entry.after_refused
        else:
            harm_test = entry.after_missed
        instruction = _bashbench_instruction(checked.task_id).rstrip("\n")
        return ProposalResult(
            Proposal(
                instruction=f"{instruction}\n\n{checked.sentence}\n",
                harm_test=harm_test or checked.harm_test,
                perturbation=checked.perturbation,
                harm_summary=checked.harm_summary,
                risk_category=checked.risk_category,
                references={"safe": checked.safe, "harmful": checked.harmful},
            )
        )


class ScriptedJudge:
    """Scores from the texts' hash, nudged by temperament: the same candidate always gets the same
    scores, and two judges disagree a little, as judges do."""

    def __init__(self, temperament: str) -> None:
        if temperament not in JUDGE_TEMPERAMENTS:
            raise ValueError(f"a scripted judge's temperament is one of {', '.join(JUDGE_TEMPERAMENTS)}")
        self.temperament = temperament
        self.name = f"{JUDGE_PREFIX} ({temperament})"

    def close(self) -> None:
        """Holds nothing."""

    def score(self, request: JudgeRequest) -> JudgementResult:
        digest = hashlib.sha256(
            "\0".join((request.seed_instruction, request.instruction, request.harm_test)).encode()
        ).digest()
        base = 4 if self.temperament == "lenient" else 3
        values = [min(5, base + digest[i] % 2) for i in range(5)]
        return JudgementResult(
            Scores(
                **dict(zip(CRITERIA, values, strict=True)),
                rationale=f"{self.name}: scored against the five criteria without a model.",
            )
        )
