"""The pipeline format, version 1, as pydantic models: the machine-readable form of
docs/pipeline-format.md, and the source of docs/pipeline-format.schema.json.

Every model is strict (a JSON number is not a string, true is not 1) and forbids fields the
contract does not name; `extra` alone takes anything. Limits that depend on settings
(VERIHARM_PIPELINE_MAX_TEXT_CHARS) are checked by validators and described in the schema;
fixed limits (name lengths, counts, ranges) are in the schema too. Rules that span fields (a
judge scores once, attempts numbered 1..n, a success needs its candidate) are model validators;
their errors carry the field they are about in `ctx["field"]`, which format.py turns into the
field of the message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    model_validator,
)
from pydantic_core import PydanticCustomError

FORMAT_VERSION = 1
SCORE_KEYS = (
    "harm_test_correctness",
    "harm_unintendedness",
    "harm_test_correspondence",
    "harm_feasibility",
    "perturbation_stealth",
)
PERTURBATIONS = ("delegation_of_control", "underspecification")
ID_REGEX = r"^[A-Za-z0-9._:/-]{1,200}$"
# Names stored in 200-character columns (judges, agents, proposers, source task ids, images) and the
# risk category's 100; counts kept in small integer columns.
MAX_NAME = 200
MAX_RISK_CATEGORY = 100
MAX_JUDGEMENTS = 100
MAX_BUDGET = 1000
MAX_FILES = 1000
MAX_PATH = 1000
TEXT_LIMIT_NOTE = "At most VERIHARM_PIPELINE_MAX_TEXT_CHARS characters (100,000 unless configured otherwise)."


def validation_context() -> dict[str, Any]:
    """Settings the validation reads, looked up once per import rather than once per field."""
    return {"max_text": settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS}


# Every constraint below runs inside pydantic-core (no Python call per field: most of a line's
# validation time otherwise). Patterns are searched, as in JSON Schema: r"\S" means "not blank".
NOT_BLANK = r"\S"
ABSOLUTE_PATH = r"^/"
# A text the pipeline writes (instructions, tests, scripts): not blank. Its length limit is a setting,
# checked by format.py after validation (only a line longer than the limit can hold a text that is).
Text = Annotated[str, Field(pattern=NOT_BLANK, description=TEXT_LIMIT_NOTE)]
# The same, possibly empty (rationales, setup scripts, file contents, optional summaries).
OptionalText = Annotated[str, Field(description=TEXT_LIMIT_NOTE)]
Name = Annotated[str, Field(max_length=MAX_NAME, pattern=NOT_BLANK)]
Identifier = Annotated[str, Field(pattern=ID_REGEX)]
Score = Annotated[int, Field(ge=1, le=5)]
Iteration = Annotated[int, Field(ge=1, le=20)]
Budget = Annotated[int, Field(ge=1, le=MAX_BUDGET)]
# Both bounds of each bounded integer, for messages that name them (pydantic's name only the one crossed).
INT_RANGES: dict[str, tuple[int, int]] = {
    **{key: (1, 5) for key in SCORE_KEYS},
    "provenance.iteration": (1, 20),
    "budget": (1, MAX_BUDGET),
}
PATTERN_MESSAGES = {
    NOT_BLANK: "must not be empty",
    ABSOLUTE_PATH: "must be an absolute path",
    ID_REGEX: "must be 1-200 characters of A-Z a-z 0-9 . _ : / -",
}


def _absent() -> Any:
    """An optional field that may be left out but, when given, must not be null (the schema
    generator leaves its null default out of the schema)."""
    return Field(default=None)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _files_paths(files: dict[str, str]) -> dict[str, str]:
    for path in files:
        if not path.strip() or ".." in path.split("/") or len(path) > MAX_PATH:
            raise PydanticCustomError("bad_path", "bad path {path}", {"path": repr(path[:100])})
    return files


class Environment(_Strict):
    """Where V_task, V_harm and the agent run."""

    workdir: Annotated[str, Field(pattern=ABSOLUTE_PATH, description=TEXT_LIMIT_NOTE)] = "/app"
    files: Annotated[
        dict[str, OptionalText],
        Field(max_length=MAX_FILES, description="Path (relative to workdir, or absolute) to file content."),
        AfterValidator(_files_paths),
    ] = {}
    setup: OptionalText = ""
    image: Name | None = None
    network: bool = False

    def record(self) -> dict[str, Any]:
        return {
            "workdir": self.workdir,
            "files": dict(self.files),
            "setup": self.setup,
            "image": self.image,
            "network": self.network,
        }


class SourceTask(_Strict):
    """The unmodified seed task t_seed; many candidates share one."""

    id: Name
    instruction: Text
    task_test: Text
    environment: Environment = Field(default_factory=Environment)

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instruction": self.instruction,
            "task_test": self.task_test,
            "environment": self.environment.record(),
        }


class Provenance(_Strict):
    target_agent: Name
    proposer: Name
    iteration: Iteration


class Scores(_Strict):
    harm_test_correctness: Score
    harm_unintendedness: Score
    harm_test_correspondence: Score
    harm_feasibility: Score
    perturbation_stealth: Score


class Judgement(_Strict):
    judge: Name
    scores: Scores
    rationale: OptionalText = ""

    def record(self) -> dict[str, Any]:
        scores = self.scores
        return {
            "judge": self.judge,
            "scores": {
                "harm_test_correctness": scores.harm_test_correctness,
                "harm_unintendedness": scores.harm_unintendedness,
                "harm_test_correspondence": scores.harm_test_correspondence,
                "harm_feasibility": scores.harm_feasibility,
                "perturbation_stealth": scores.perturbation_stealth,
            },
            "rationale": self.rationale,
        }


class References(_Strict):
    """Reference executions: shell scripts that should (safe) or should not (harmful) leave no harm."""

    safe: Text = _absent()
    harmful: Text = _absent()


class Twin(_Strict):
    """A capability twin (V3AST-Bench): a benign task of the same workflow."""

    instruction: Text
    task_test: Text = _absent()


class CandidateLine(_Strict):
    """`"kind": "candidate"`: one benchmark candidate c = (t, V_task, V_harm)."""

    model_config = ConfigDict(title="candidate")

    kind: Literal["candidate"]
    id: Identifier
    source_task: SourceTask
    instruction: Text
    harm_test: Text
    perturbation: Literal["underspecification", "delegation_of_control"]
    provenance: Provenance
    judgements: Annotated[list[Judgement], Field(max_length=MAX_JUDGEMENTS)]
    harm_summary: OptionalText = ""
    risk_category: Annotated[str, Field(max_length=MAX_RISK_CATEGORY)] = ""
    references: References = Field(default_factory=References)
    twin: Twin | None = None
    extra: dict[str, Any] = {}

    @model_validator(mode="after")
    def _one_score_per_judge(self) -> CandidateLine:
        judges = [j.judge for j in self.judgements]
        if len(set(judges)) != len(judges):
            raise PydanticCustomError(
                "judge_twice",
                "{message}",
                {"field": "judgements", "message": "a judge may score a candidate only once"},
            )
        return self

    def record(self) -> dict[str, Any]:
        """The normalised record: optional fields filled in, so that an export re-imports to the same hash."""
        references = {}
        if self.references.safe is not None:
            references["safe"] = self.references.safe
        if self.references.harmful is not None:
            references["harmful"] = self.references.harmful
        twin = None
        if self.twin is not None:
            twin = {"instruction": self.twin.instruction}
            if self.twin.task_test is not None:
                twin["task_test"] = self.twin.task_test
        provenance = self.provenance
        return {
            "kind": "candidate",
            "id": self.id,
            "source_task": self.source_task.record(),
            "instruction": self.instruction,
            "harm_test": self.harm_test,
            "perturbation": self.perturbation,
            "provenance": {
                "target_agent": provenance.target_agent,
                "proposer": provenance.proposer,
                "iteration": provenance.iteration,
            },
            "judgements": [j.record() for j in self.judgements],
            "harm_summary": self.harm_summary,
            "risk_category": self.risk_category,
            "references": references,
            "twin": twin,
            "extra": self.extra,
        }


class Attempt(_Strict):
    iteration: Annotated[int, Field(ge=1)]
    task_passed: bool
    harm_detected: bool


class SearchLine(_Strict):
    """`"kind": "search"`: one (target agent, source task, proposer) search, for Table 1."""

    model_config = ConfigDict(title="search")

    kind: Literal["search"]
    source_task_id: Name
    target_agent: Name
    proposer: Name
    budget: Budget
    attempts: Annotated[list[Attempt], Field(min_length=1)]
    candidate_id: Identifier | None

    @model_validator(mode="after")
    def _attempts_tell_one_search(self) -> SearchLine:
        def refuse(field: str, message: str) -> PydanticCustomError:
            return PydanticCustomError("search_rule", "{message}", {"field": field, "message": message})

        attempts = self.attempts
        if len(attempts) > self.budget:
            raise refuse("attempts", f"has {len(attempts)} attempts, more than the budget {self.budget}")
        for index, attempt in enumerate(attempts):
            if attempt.iteration != index + 1:
                raise refuse(
                    f"attempts[{index}].iteration", f"must be {index + 1}: attempts are numbered 1..n in order"
                )
        for index, attempt in enumerate(attempts[:-1]):
            if attempt.task_passed and attempt.harm_detected:
                raise refuse(
                    f"attempts[{index}]",
                    "a harmful success before the last attempt: the search stops at its first success",
                )
        succeeded = attempts[-1].task_passed and attempts[-1].harm_detected
        if succeeded and self.candidate_id is None:
            raise refuse("candidate_id", "is required when the search succeeded")
        if not succeeded and self.candidate_id is not None:
            raise refuse("candidate_id", "must be null when the search found no harmful success")
        return self

    def record(self) -> dict[str, Any]:
        return {
            "kind": "search",
            "source_task_id": self.source_task_id,
            "target_agent": self.target_agent,
            "proposer": self.proposer,
            "budget": self.budget,
            "attempts": [
                {"iteration": a.iteration, "task_passed": a.task_passed, "harm_detected": a.harm_detected}
                for a in self.attempts
            ],
            "candidate_id": self.candidate_id,
        }


Line = Annotated[CandidateLine | SearchLine, Field(discriminator="kind")]
LINE: TypeAdapter[CandidateLine | SearchLine] = TypeAdapter(Line)
MODELS: dict[str, type[CandidateLine | SearchLine]] = {"candidate": CandidateLine, "search": SearchLine}
