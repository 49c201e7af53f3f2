"""What a search hands its proposer and judges, and what they hand back (pure: no database, no HTTP).

The search (Algorithm 1) owns the order of steps and their records; a proposer or a judge only
turns one request into one result. Both come in two kinds behind the same protocol: a model
endpoint reached through the gateway, and the scripted demo ones that call no model. A result
never raises for what the model said: a reply that fails validation after its retries comes back
as an `error`, which the search records as that attempt's ending (never as a verdict).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from candidates.pipeline.models import PERTURBATIONS, SCORE_KEYS

PERTURBATION_KINDS: tuple[str, ...] = PERTURBATIONS
CRITERIA: tuple[str, ...] = SCORE_KEYS


@dataclass(frozen=True)
class SeedTask:
    """t_seed with its own test V_task (never changed by a search) and its environment."""

    external_id: str
    instruction: str
    task_test: str
    environment: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Feedback:
    """F: one earlier attempt of the same search, as the proposer sees it next time.

    `transcript` is the target's trajectory rendered as text (commands and their output, bounded);
    `r_task`/`r_harm` are None when no rollout ran (the proposal was refused before one: `note`
    says why, e.g. the harm test passes on the untouched environment)."""

    iteration: int
    instruction: str
    harm_test: str
    transcript: str
    r_task: int | None
    r_harm: int | None
    note: str = ""


@dataclass(frozen=True)
class ProposalRequest:
    seed: SeedTask
    seed_transcript: str  # tau_seed, rendered as `Feedback.transcript` is
    iteration: int  # 1..budget
    budget: int
    perturbations: tuple[str, ...]  # the kinds the run allows
    feedback: tuple[Feedback, ...]  # every earlier attempt of this search, oldest first


@dataclass(frozen=True)
class Proposal:
    """(t~, V~_harm) and what comes with them: the kind, one sentence on the harm, its category, and
    safe and harmful reference scripts for the reference check of a kept candidate."""

    instruction: str
    harm_test: str
    perturbation: str
    harm_summary: str = ""
    risk_category: str = ""
    references: Mapping[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ModelCallRecord:
    """One call to a proposer or judge endpoint, as the search stores it (none for scripted ones)."""

    prompt_name: str
    prompt_version: str
    prompt_sha256: str
    route: str
    model: str
    status_code: int
    request_text: str  # the prompt as sent (messages), never the key
    reply_text: str  # the raw reply body, key scrubbed
    input_tokens: int = 0
    output_tokens: int = 0
    usage_estimated: bool = False
    cost_usd: Decimal | None = None
    latency: float = 0.0
    validation_error: str = ""  # why this reply was not accepted (then retried or given up)


@dataclass(frozen=True)
class ProposalResult:
    proposal: Proposal | None
    calls: tuple[ModelCallRecord, ...] = ()
    error: str = ""  # set exactly when `proposal` is None: the attempt ends as a proposer error
    budget_spent: bool = False  # no call was made because the run's USD budget is spent


@dataclass(frozen=True)
class JudgeRequest:
    """All a judge may see (paper section 2.2): no trajectory, final state or test result."""

    seed_instruction: str
    instruction: str
    harm_test: str


@dataclass(frozen=True)
class Scores:
    harm_test_correctness: int
    harm_unintendedness: int
    harm_test_correspondence: int
    harm_feasibility: int
    perturbation_stealth: int
    rationale: str = ""

    def as_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in CRITERIA}

    @property
    def total(self) -> int:
        return sum(self.as_dict().values())


@dataclass(frozen=True)
class JudgementResult:
    scores: Scores | None
    calls: tuple[ModelCallRecord, ...] = ()
    error: str = ""  # set exactly when `scores` is None
    budget_spent: bool = False


class Proposer(Protocol):
    name: str  # as stored in a candidate's provenance and on its search record

    def propose(self, request: ProposalRequest) -> ProposalResult: ...

    def close(self) -> None:
        """Give back what it holds (a model endpoint's gateway)."""


class Judge(Protocol):
    name: str  # as stored on the candidate's judgement

    def score(self, request: JudgeRequest) -> JudgementResult: ...

    def close(self) -> None: ...
