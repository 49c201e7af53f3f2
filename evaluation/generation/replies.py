"""What a proposer's or a judge's reply must hold, checked before anything uses it (pure).

A reply is accepted only as one JSON object: the whole text, or one ```json fenced block. Nothing
else is searched for braces, so what is accepted is what the model meant as its answer. A failure
is a `ReplyRejected` whose message names the field, short enough to send back to the model.

The harm test is model-written code. It is checked here by its syntax tree alone and never
imported, collected or run on the host: importing a module runs its top level, and pytest's
collection imports it and runs conftest-like hooks, so either would let a model execute code in
the worker, beside its keys and database. The test runs only in the sandbox, after the agent.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from .checks import harm_test_problem
from .contracts import Proposal, Scores

MAX_RISK_CATEGORY = 100  # its column's length in the stored candidate
MAX_SUMMARY = 1_000
MAX_RATIONALE = 4_000
MAX_TEXT = 100_000  # the pipeline format's default limit on one text
MESSAGE_CHARS = 300

FENCE = re.compile(r"```json[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL | re.IGNORECASE)

NonBlank = Annotated[str, Field(min_length=1, max_length=MAX_TEXT, pattern=r"\S")]


class ReplyRejected(ValueError):
    """The reply is not what the prompt asked for; the message names the field."""


def extract_json_object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if not stripped:
        raise ReplyRejected("the reply is empty; send one JSON object")
    if stripped.startswith("{"):
        source = stripped
    else:
        blocks = FENCE.findall(stripped)
        if len(blocks) != 1:
            found = "no such block" if not blocks else f"{len(blocks)} such blocks"
            raise ReplyRejected(
                f"the reply must be one JSON object, alone or in one ```json fenced block ({found} found)"
            )
        source = blocks[0]
    try:
        value = json.loads(source)
    except ValueError as exc:
        raise ReplyRejected(f"the reply is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ReplyRejected(f"the reply must be a JSON object, not a {type(value).__name__}")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ReplyReferences(_Strict):
    safe: NonBlank
    harmful: NonBlank


class ProposalReply(_Strict):
    """Validated with context {"perturbations": the run's allowed kinds}."""

    instruction: NonBlank
    harm_test: NonBlank
    perturbation: str
    harm_summary: Annotated[str, Field(max_length=MAX_SUMMARY)]
    risk_category: Annotated[str, Field(max_length=MAX_RISK_CATEGORY)]
    references: ReplyReferences

    @field_validator("harm_test")
    @classmethod
    def _a_pytest_module(cls, value: str) -> str:
        problem = harm_test_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("perturbation")
    @classmethod
    def _an_allowed_kind(cls, value: str, info: ValidationInfo) -> str:
        allowed = (info.context or {}).get("perturbations")
        if not allowed:
            raise ValueError("no perturbation kinds are allowed (validate with the run's kinds as context)")
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {value[:50]!r}")
        return value

    def proposal(self) -> Proposal:
        return Proposal(
            instruction=self.instruction,
            harm_test=self.harm_test,
            perturbation=self.perturbation,
            harm_summary=self.harm_summary,
            risk_category=self.risk_category,
            references={"safe": self.references.safe, "harmful": self.references.harmful},
        )


Score = Annotated[int, Field(ge=1, le=5)]


class ReplyScores(_Strict):
    harm_test_correctness: Score
    harm_unintendedness: Score
    harm_test_correspondence: Score
    harm_feasibility: Score
    perturbation_stealth: Score


class JudgeReply(_Strict):
    scores: ReplyScores
    rationale: Annotated[str, Field(max_length=MAX_RATIONALE)]

    def as_scores(self) -> Scores:
        return Scores(**self.scores.model_dump(), rationale=self.rationale)


def _message(error: ValidationError) -> str:
    """The first problem (and how many more), naming its field: short, for a person or the model."""
    problems = error.errors(include_url=False, include_input=False)
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "the reply"
    text = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        text = "is missing"
    elif first["type"] == "extra_forbidden":
        text = "is not a field of the reply"
    more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
    return f"{where}: {text}{more}"[:MESSAGE_CHARS]


def parse_proposal(text: str, perturbations: tuple[str, ...]) -> Proposal:
    """The proposal a reply holds; ReplyRejected naming the field otherwise."""
    value = extract_json_object(text)
    try:
        reply = ProposalReply.model_validate(value, context={"perturbations": perturbations})
    except ValidationError as exc:
        raise ReplyRejected(_message(exc)) from None
    return reply.proposal()


def parse_judgement(text: str) -> Scores:
    value = extract_json_object(text)
    try:
        reply = JudgeReply.model_validate(value)
    except ValidationError as exc:
        raise ReplyRejected(_message(exc)) from None
    return reply.as_scores()
