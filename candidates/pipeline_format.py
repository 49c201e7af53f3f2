"""Parse and validate the pipeline's JSON Lines format, version 1 (pure: no database).

The contract is docs/pipeline-format.md. Every record comes back normalised (optional
fields filled with their defaults) so that a re-import of an export hashes the same,
and every error names the file, the line and the field.

The validation is written by hand rather than with a schema library: the contract has
cross-field rules (success implies a candidate, no earlier success, attempts in order)
and the messages must read well for curators; a hand-written pass is also the fastest
part of a 100,000-line import.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from veriharm_site.input_safety import first_bad_text, loads_checked

from .models import SCORE_KEYS, Perturbation

FORMAT_VERSION = 1
ID_PATTERN = re.compile(r"[A-Za-z0-9._:/-]{1,200}")
PERTURBATIONS = frozenset(Perturbation.values)
MAX_ERRORS = 200
# Names stored in 200-character columns (judges, agents, proposers, source task ids, images) and the
# risk category's 100; counts kept in small integer columns.
MAX_NAME = 200
MAX_RISK_CATEGORY = 100
MAX_JUDGEMENTS = 100
MAX_BUDGET = 1000
MAX_FILES = 1000

CANDIDATE_FIELDS = {
    "kind", "id", "source_task", "instruction", "harm_test", "perturbation", "provenance", "judgements",
    "harm_summary", "risk_category", "references", "twin", "extra",
}
CANDIDATE_REQUIRED = ("id", "source_task", "instruction", "harm_test", "perturbation", "provenance", "judgements")
SOURCE_TASK_FIELDS = {"id", "instruction", "task_test", "environment"}
ENVIRONMENT_FIELDS = {"workdir", "files", "setup", "image", "network"}
PROVENANCE_FIELDS = {"target_agent", "proposer", "iteration"}
JUDGEMENT_FIELDS = {"judge", "scores", "rationale"}
TWIN_FIELDS = {"instruction", "task_test"}
REFERENCE_FIELDS = {"safe", "harmful"}
SEARCH_FIELDS = {"kind", "source_task_id", "target_agent", "proposer", "budget", "attempts", "candidate_id"}
ATTEMPT_FIELDS = {"iteration", "task_passed", "harm_detected"}


@dataclass(frozen=True)
class Location:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}, line {self.line}"


@dataclass(frozen=True)
class FormatError:
    location: Location
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.location}, field '{self.field}'" if self.field else str(self.location)
        return f"{where}: {self.message}"


@dataclass
class Record:
    kind: str  # "candidate" or "search"
    data: dict[str, Any]
    location: Location
    content_hash: str = ""


@dataclass
class ParseResult:
    records: list[Record] = field(default_factory=list)
    errors: list[FormatError] = field(default_factory=list)

    @property
    def candidates(self) -> list[Record]:
        return [r for r in self.records if r.kind == "candidate"]

    @property
    def searches(self) -> list[Record]:
        return [r for r in self.records if r.kind == "search"]


class _Invalid(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content_hash(data: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def _expect(cond: bool, field: str, message: str) -> None:
    if not cond:
        raise _Invalid(field, message)


def _check_object(value: Any, field: str, allowed: set[str], required: Iterable[str] = ()) -> dict[str, Any]:
    _expect(isinstance(value, dict), field, "must be an object")
    for key in value:
        if key not in allowed:
            name = f"{field}.{key}" if field else key
            raise _Invalid(name, "unknown field")
    for key in required:
        name = f"{field}.{key}" if field else key
        _expect(key in value, name, "is required")
    return value


def _string(value: Any, field: str, *, allow_empty: bool = False, max_chars: int | None = None) -> str:
    """A text field; at most `max_chars` characters (VERIHARM_PIPELINE_MAX_TEXT_CHARS by default)."""
    _expect(isinstance(value, str), field, "must be a string")
    _expect(allow_empty or value.strip() != "", field, "must not be empty")
    limit = max_chars if max_chars is not None else settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS
    if len(value) > limit:
        setting = "" if max_chars is not None else " (VERIHARM_PIPELINE_MAX_TEXT_CHARS)"
        raise _Invalid(field, f"is {len(value)} characters long; at most {limit} are allowed{setting}")
    return value


def _name(value: Any, field: str, max_chars: int = MAX_NAME) -> str:
    return _string(value, field, max_chars=max_chars)


def _integer(value: Any, field: str, low: int, high: int | None = None) -> int:
    # bool is an int in Python; the format means a JSON number.
    _expect(isinstance(value, int) and not isinstance(value, bool), field, "must be an integer")
    if high is None:
        _expect(value >= low, field, f"must be at least {low}, got {value}")
    else:
        _expect(low <= value <= high, field, f"must be an integer from {low} to {high}, got {value}")
    return value


def _boolean(value: Any, field: str) -> bool:
    _expect(isinstance(value, bool), field, "must be true or false")
    return value


def _identifier(value: Any, field: str) -> str:
    _expect(isinstance(value, str), field, "must be a string")
    _expect(ID_PATTERN.fullmatch(value) is not None, field, "must be 1-200 characters of A-Z a-z 0-9 . _ : / -")
    return value


def normalise_environment(value: Any, field: str = "source_task.environment") -> dict[str, Any]:
    env = _check_object(value, field, ENVIRONMENT_FIELDS)
    workdir = env.get("workdir", "/app")
    _string(workdir, f"{field}.workdir")
    _expect(workdir.startswith("/"), f"{field}.workdir", "must be an absolute path")
    files = env.get("files", {})
    _expect(isinstance(files, dict), f"{field}.files", "must be an object of path to content")
    _expect(len(files) <= MAX_FILES, f"{field}.files", f"has {len(files)} files; at most {MAX_FILES} are allowed")
    for path, content in files.items():
        _expect(path.strip() != "" and ".." not in path.split("/") and len(path) <= 1000, f"{field}.files",
                f"bad path {path[:100]!r}")
        _string(content, f"{field}.files.{path}", allow_empty=True)
    setup = env.get("setup", "")
    _string(setup, f"{field}.setup", allow_empty=True)
    image = env.get("image")
    if image is not None:
        _name(image, f"{field}.image")
    network = _boolean(env.get("network", False), f"{field}.network")
    return {"workdir": workdir, "files": dict(files), "setup": setup, "image": image, "network": network}


def normalise_source_task(value: Any) -> dict[str, Any]:
    task = _check_object(value, "source_task", SOURCE_TASK_FIELDS, ("id", "instruction", "task_test"))
    return {
        "id": _name(task["id"], "source_task.id"),
        "instruction": _string(task["instruction"], "source_task.instruction"),
        "task_test": _string(task["task_test"], "source_task.task_test"),
        "environment": normalise_environment(task.get("environment", {})),
    }


def _judgement(value: Any, index: int) -> dict[str, Any]:
    field = f"judgements[{index}]"
    item = _check_object(value, field, JUDGEMENT_FIELDS, ("judge", "scores"))
    scores = item["scores"]
    _expect(isinstance(scores, dict), f"{field}.scores", "must be an object")
    for key in scores:
        _expect(key in SCORE_KEYS, f"{field}.scores.{key}", "unknown score key")
    for key in SCORE_KEYS:
        _expect(key in scores, f"{field}.scores.{key}", "is required")
        _integer(scores[key], f"{field}.scores.{key}", 1, 5)
    rationale = item.get("rationale", "")
    _string(rationale, f"{field}.rationale", allow_empty=True)
    return {
        "judge": _name(item["judge"], f"{field}.judge"),
        "scores": {key: scores[key] for key in SCORE_KEYS},
        "rationale": rationale,
    }


def normalise_candidate(obj: dict[str, Any]) -> dict[str, Any]:
    _check_object(obj, "", CANDIDATE_FIELDS, CANDIDATE_REQUIRED)
    provenance = _check_object(obj["provenance"], "provenance", PROVENANCE_FIELDS, tuple(sorted(PROVENANCE_FIELDS)))
    perturbation = obj["perturbation"]
    _expect(
        perturbation in PERTURBATIONS,
        "perturbation",
        f"must be one of {', '.join(sorted(PERTURBATIONS))}, got {perturbation!r}",
    )
    judgements = obj["judgements"]
    _expect(isinstance(judgements, list), "judgements", "must be a list")
    _expect(len(judgements) <= MAX_JUDGEMENTS, "judgements",
            f"has {len(judgements)} judgements; at most {MAX_JUDGEMENTS} are allowed")
    normalised_judgements = [_judgement(j, i) for i, j in enumerate(judgements)]
    judges = [j["judge"] for j in normalised_judgements]
    _expect(len(set(judges)) == len(judges), "judgements", "a judge may score a candidate only once")
    references = _check_object(obj.get("references", {}), "references", REFERENCE_FIELDS)
    for key, script in references.items():
        _string(script, f"references.{key}")
    twin = obj.get("twin")
    if twin is not None:
        _check_object(twin, "twin", TWIN_FIELDS, ("instruction",))
        twin = {"instruction": _string(twin["instruction"], "twin.instruction")}
        if "task_test" in obj["twin"]:
            twin["task_test"] = _string(obj["twin"]["task_test"], "twin.task_test")
    extra = obj.get("extra", {})
    _expect(isinstance(extra, dict), "extra", "must be an object")
    harm_summary = obj.get("harm_summary", "")
    risk_category = obj.get("risk_category", "")
    return {
        "kind": "candidate",
        "id": _identifier(obj["id"], "id"),
        "source_task": normalise_source_task(obj["source_task"]),
        "instruction": _string(obj["instruction"], "instruction"),
        "harm_test": _string(obj["harm_test"], "harm_test"),
        "perturbation": perturbation,
        "provenance": {
            "target_agent": _name(provenance["target_agent"], "provenance.target_agent"),
            "proposer": _name(provenance["proposer"], "provenance.proposer"),
            "iteration": _integer(provenance["iteration"], "provenance.iteration", 1, 20),
        },
        "judgements": normalised_judgements,
        "harm_summary": _string(harm_summary, "harm_summary", allow_empty=True),
        "risk_category": _string(risk_category, "risk_category", allow_empty=True, max_chars=MAX_RISK_CATEGORY),
        "references": dict(references),
        "twin": twin,
        "extra": extra,
    }


def normalise_search(obj: dict[str, Any]) -> dict[str, Any]:
    _check_object(obj, "", SEARCH_FIELDS, tuple(sorted(SEARCH_FIELDS - {"kind"})))
    budget = _integer(obj["budget"], "budget", 1, MAX_BUDGET)
    attempts = obj["attempts"]
    _expect(isinstance(attempts, list) and attempts, "attempts", "must be a non-empty list")
    _expect(len(attempts) <= budget, "attempts", f"has {len(attempts)} attempts, more than the budget {budget}")
    normalised = []
    for index, attempt in enumerate(attempts):
        field = f"attempts[{index}]"
        _check_object(attempt, field, ATTEMPT_FIELDS, ("iteration", "task_passed", "harm_detected"))
        iteration = _integer(attempt["iteration"], f"{field}.iteration", 1)
        _expect(iteration == index + 1, f"{field}.iteration", f"must be {index + 1}: attempts are numbered 1..n in order")
        normalised.append(
            {
                "iteration": iteration,
                "task_passed": _boolean(attempt["task_passed"], f"{field}.task_passed"),
                "harm_detected": _boolean(attempt["harm_detected"], f"{field}.harm_detected"),
            }
        )
    for index, attempt in enumerate(normalised[:-1]):
        _expect(
            not (attempt["task_passed"] and attempt["harm_detected"]),
            f"attempts[{index}]",
            "a harmful success before the last attempt: the search stops at its first success",
        )
    succeeded = normalised[-1]["task_passed"] and normalised[-1]["harm_detected"]
    candidate_id = obj["candidate_id"]
    if candidate_id is not None:
        _identifier(candidate_id, "candidate_id")
    _expect(not succeeded or candidate_id is not None, "candidate_id", "is required when the search succeeded")
    _expect(succeeded or candidate_id is None, "candidate_id", "must be null when the search found no harmful success")
    return {
        "kind": "search",
        "source_task_id": _name(obj["source_task_id"], "source_task_id"),
        "target_agent": _name(obj["target_agent"], "target_agent"),
        "proposer": _name(obj["proposer"], "proposer"),
        "budget": budget,
        "attempts": normalised,
        "candidate_id": candidate_id,
    }


def parse_line(raw: str | bytes, location: Location) -> Record:
    """One line to a normalised record; raises FormatError-carrying _Invalid on bad input."""
    limit = settings.VERIHARM_PIPELINE_MAX_LINE_BYTES
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise _Invalid("", f"is {size} bytes long; a line may have at most {limit} (VERIHARM_PIPELINE_MAX_LINE_BYTES)")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise _Invalid("", f"is not valid UTF-8 (byte {exc.start + 1})") from None
    try:
        obj = loads_checked(text, max_depth=settings.VERIHARM_JSON_MAX_DEPTH)
    except json.JSONDecodeError as exc:
        raise _Invalid("", f"malformed JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # too deep, NaN or Infinity, a number too long to read
        raise _Invalid("", str(exc)) from None
    _expect(isinstance(obj, dict), "", "each line must be a JSON object")
    # JSON escapes can spell what PostgreSQL and UTF-8 cannot store (\u0000, a lone \ud800): refused
    # here with the field, rather than failing the database write or the content hash.
    bad = first_bad_text(obj)
    if bad:
        raise _Invalid(*bad)
    kind = obj.get("kind")
    if kind == "candidate":
        data = normalise_candidate(obj)
    elif kind == "search":
        data = normalise_search(obj)
    else:
        raise _Invalid("kind", f"must be 'candidate' or 'search', got {kind!r}")
    return Record(kind=kind, data=data, location=location, content_hash=content_hash(data))


def iter_lines(lines: Iterable[str | bytes], file: str) -> Iterator[tuple[Location, str | bytes]]:
    """Numbered non-blank lines, still undecoded: decoding belongs to parse_line, where a bad
    byte becomes an error naming its line instead of ending the whole import."""
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            yield Location(file, number), raw


def parse(lines: Iterable[tuple[Location, str | bytes]]) -> ParseResult:
    """Validate every line and the rules that span lines within the batch."""
    result = ParseResult()
    source_tasks: dict[str, tuple[dict[str, Any], Location]] = {}
    candidates: dict[str, Record] = {}
    searches: dict[tuple[str, str, str], Record] = {}

    def fail(location: Location, field: str, message: str) -> None:
        if len(result.errors) < MAX_ERRORS:
            result.errors.append(FormatError(location, field, message))

    for location, text in lines:
        try:
            record = parse_line(text, location)
        except _Invalid as exc:
            fail(location, exc.field, exc.message)
            continue
        if record.kind == "candidate":
            task = record.data["source_task"]
            seen = source_tasks.get(task["id"])
            if seen is None:
                source_tasks[task["id"]] = (task, location)
            elif seen[0] != task:
                fail(location, "source_task", f"conflicts with source task {task['id']!r} as given at {seen[1]}")
                continue
            earlier = candidates.get(record.data["id"])
            if earlier is not None:
                if earlier.content_hash != record.content_hash:
                    fail(location, "id", f"candidate {record.data['id']!r} appears with other content at {earlier.location}")
                continue
            candidates[record.data["id"]] = record
        else:
            key = (record.data["source_task_id"], record.data["target_agent"], record.data["proposer"])
            earlier = searches.get(key)
            if earlier is not None:
                if earlier.content_hash != record.content_hash:
                    fail(location, "source_task_id", f"the same search appears with other content at {earlier.location}")
                continue
            searches[key] = record
        result.records.append(record)
    return result


def parse_files(paths: Iterable[str]) -> ParseResult:
    def lines() -> Iterator[tuple[Location, str | bytes]]:
        for path in paths:
            with open(path, "rb") as handle:
                yield from iter_lines(handle, str(path))

    return parse(lines())


def quality(judgements: list[dict[str, Any]]) -> float | None:
    """Q(c): the mean over judges of the sum of their five scores; None without judges."""
    if not judgements:
        return None
    return sum(sum(j["scores"].values()) for j in judgements) / len(judgements)


def to_line(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)
