"""Parse and validate the pipeline's JSON Lines format, version 1 (pure: no database).

The contract is docs/pipeline-format.md; its machine-readable form is the pydantic models in
models.py (and the JSON Schema generated from them). Every record comes back normalised
(optional fields filled with their defaults) so that a re-import of an export hashes the same,
and every error names the file, the line and the field.

A line is first read and validated in one step by pydantic-core from its bytes (in Rust: no
Python object per JSON value before validation), which is most of an import's time saved. That
fast path only vouches for lines it accepts and that the careful path would accept alike; any
other line (an error, an escape of text PostgreSQL cannot store, a number or a nesting in `extra`
that orjson reads otherwise) is read again by the careful path, which words the error: orjson,
checks for what no schema can say (nesting depth, storable text), then the kind's model, whose
first error becomes the line's message. Anything orjson refuses is read again by the standard
library, whose messages name the column and whose checks name the reason (too deep, NaN, a lone
surrogate).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings
from pydantic import ValidationError

from veriharm_site.input_safety import first_bad_text, loads_checked

from .models import (
    FORMAT_VERSION,
    INT_RANGES,
    LINE,
    MAX_BUDGET,
    MAX_FILES,
    MAX_JUDGEMENTS,
    MAX_NAME,
    MAX_RISK_CATEGORY,
    MODELS,
    PATTERN_MESSAGES,
    PERTURBATIONS,
    CandidateLine,
    SearchLine,
    validation_context,
)

__all__ = [
    "FORMAT_VERSION",
    "MAX_BUDGET",
    "MAX_ERRORS",
    "MAX_FILES",
    "MAX_JUDGEMENTS",
    "MAX_NAME",
    "MAX_RISK_CATEGORY",
    "FormatError",
    "Location",
    "ParseResult",
    "Record",
    "canonical_json",
    "content_hash",
    "iter_lines",
    "normalise_candidate",
    "normalise_search",
    "parse",
    "parse_files",
    "parse_line",
    "parse_stream",
    "quality",
    "to_line",
]

MAX_ERRORS = 200
# Problems named for one line; past it, one more error counts the rest.
MAX_ERRORS_PER_LINE = 10
# Only these escapes spell text that cannot be stored (\u0000, a lone surrogate); a line without
# any is not walked. A false alarm (an escaped backslash before "u0000") only costs the walk.
_BAD_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_BAD_ESCAPE_BYTES = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


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
    """A line refused: its first problem as `field` and `message`, and every problem found (the
    model's validation reports them all at once) in `problems`."""

    def __init__(self, field: str, message: str, *, more: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.problems = [(field, message), *more]


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_text(text: str) -> str:
    """The sha256 of a text's UTF-8 bytes: how every recorded input hash (a trial's, an agent pin's,
    an export's) is taken."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_INT64 = range(-(2**63), 2**64)


def _orjson_writes_it_alike(value: Any) -> bool:
    """Whether orjson's sorted output equals canonical_json's: it does for everything but floats
    (1e16 against 1e+16) and integers beyond 64 bits; only `extra` can hold those."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) or (isinstance(item, int) and not isinstance(item, bool) and item not in _INT64):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def content_hash(data: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces, UTF-8), as stored since the first import."""
    if _orjson_writes_it_alike(data.get("extra")):
        return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return sha256_text(canonical_json(data))


def _field_path(loc: Iterable[int | str]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else part
    return path


_SIMPLE_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "unknown field",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "too_short": "must be a non-empty list",
    "none_required": "must be null",
}


def _line_refused(exc: ValidationError) -> _Invalid:
    """Every problem pydantic found in a line, each worded as the contract's, at most
    MAX_ERRORS_PER_LINE of them (and a last one counting the rest)."""
    found = [_error(error) for error in exc.errors(include_url=False)]
    problems = [(problem.field, problem.message) for problem in found[:MAX_ERRORS_PER_LINE]]
    if len(found) > MAX_ERRORS_PER_LINE:
        problems.append(("", f"and {len(found) - MAX_ERRORS_PER_LINE} more problems on this line"))
    first, *more = problems
    return _Invalid(*first, more=more)


def _error(error: Any) -> _Invalid:
    """pydantic's error, worded as the contract's: the field by its path, the message for a curator."""
    ctx = error.get("ctx") or {}
    path = _field_path(error["loc"])
    kind = error["type"]
    if "field" in ctx:  # a rule over several fields, raised by a model validator
        return _Invalid(_field_path([*error["loc"], ctx["field"]]), str(ctx["message"]))
    if kind in _SIMPLE_MESSAGES:
        return _Invalid(path, _SIMPLE_MESSAGES[kind])
    value = error.get("input")
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern"))
        return _Invalid(path, PATTERN_MESSAGES.get(pattern, f"must match {pattern}"))
    if kind in ("greater_than_equal", "less_than_equal"):
        bounds = INT_RANGES.get(path) or INT_RANGES.get(path.rsplit(".", 1)[-1])
        if bounds:
            return _Invalid(path, f"must be an integer from {bounds[0]} to {bounds[1]}, got {value}")
        if kind == "greater_than_equal":
            return _Invalid(path, f"must be at least {ctx['ge']}, got {value}")
        return _Invalid(path, f"must be at most {ctx['le']}, got {value}")
    if kind == "literal_error":
        return _Invalid(path, f"must be one of {', '.join(sorted(PERTURBATIONS))}, got {value!r}")
    if kind == "string_too_long":
        return _Invalid(path, f"is {len(value)} characters long; at most {ctx['max_length']} are allowed")
    if kind == "too_long":
        what = {"judgements": "judgements", "files": "files"}.get(str(error["loc"][-1]), "items")
        return _Invalid(
            path, f"has {ctx.get('actual_length', len(value))} {what}; at most {ctx['max_length']} are allowed"
        )
    message = error["msg"]
    return _Invalid(path, message[:1].lower() + message[1:])


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _read_json(text: str) -> Any:
    """The line as Python objects, depth and storable text checked; raises _Invalid."""
    max_depth = settings.VERIHARM_JSON_MAX_DEPTH
    try:
        obj = orjson.loads(text)
        suspicious = _BAD_ESCAPE.search(text) is not None
    except orjson.JSONDecodeError:
        # orjson refuses too much nesting, NaN, huge integers and lone surrogates without saying
        # which; the standard parser, behind the depth scan, either reads the line or says why not.
        try:
            obj = loads_checked(text, max_depth=max_depth)
        except json.JSONDecodeError as exc:
            raise _Invalid("", f"malformed JSON: {exc.msg} at column {exc.colno}") from None
        except ValueError as exc:  # too deep, NaN or Infinity, a number too long to read
            raise _Invalid("", str(exc)) from None
        suspicious = True
    if not isinstance(obj, dict):
        raise _Invalid("", "each line must be a JSON object")
    # orjson stops at 1,024 levels; below that only `extra` may nest (every other field has a fixed
    # shape its model refuses otherwise), so only `extra` is measured.
    if _depth_exceeds(obj.get("extra"), max_depth - 1):
        raise _Invalid("", f"JSON nested deeper than {max_depth} levels (VERIHARM_JSON_MAX_DEPTH)")
    # JSON escapes can spell what PostgreSQL and UTF-8 cannot store (\u0000, a lone \ud800): refused
    # here with the field, rather than failing the database write or the content hash.
    if suspicious:
        bad = first_bad_text(obj)
        if bad:
            raise _Invalid(*bad)
    return obj


def _check_text_lengths(data: dict[str, Any], limit: int) -> None:
    """Refuse the first text of the contract (not of `extra`, bounded by the line's size alone)
    longer than VERIHARM_PIPELINE_MAX_TEXT_CHARS, naming its field."""
    stack: list[tuple[Any, str]] = [(value, key) for key, value in reversed(data.items()) if key != "extra"]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str) and len(item) > limit:
            raise _Invalid(
                where, f"is {len(item)} characters long; at most {limit} are allowed (VERIHARM_PIPELINE_MAX_TEXT_CHARS)"
            )
        if isinstance(item, dict):
            stack.extend((child, f"{where}.{key}") for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{index}]") for index, child in reversed(list(enumerate(item))))


def _normalised(model: type[CandidateLine | SearchLine], obj: dict[str, Any]) -> dict[str, Any]:
    try:
        data = model.model_validate(obj).record()
    except ValidationError as exc:
        raise _line_refused(exc) from None
    _check_text_lengths(data, validation_context()["max_text"])
    return data


def normalise_candidate(obj: dict[str, Any]) -> dict[str, Any]:
    """A candidate line's normalised record (optional fields filled in); raises on an invalid one."""
    return _normalised(CandidateLine, obj)


def normalise_search(obj: dict[str, Any]) -> dict[str, Any]:
    return _normalised(SearchLine, obj)


def _extra_reads_alike(value: Any, max_depth: int) -> bool:
    """Whether the careful path would read `extra` to the same values: no float (orjson and the
    standard library disagree on NaN, 1e400 and friends), no integer orjson reads as a float (beyond
    64 bits), no nesting beyond the limit (the careful path refuses it)."""
    stack = [(value, 2)]  # `extra` itself is the line's second level
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return False
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
        elif isinstance(item, float) or (isinstance(item, int) and not isinstance(item, bool) and item not in _INT64):
            return False
    return True


def _fast_record(raw: str | bytes, location: Location, context: dict[str, Any]) -> Record | None:
    """The record of a line pydantic-core reads and validates straight from its bytes, or None when
    the careful path must read the line (to word its error, or because only it judges the line)."""
    if (_BAD_ESCAPE_BYTES.search(raw) if isinstance(raw, bytes) else _BAD_ESCAPE.search(raw)) is not None:
        return None
    try:
        data = LINE.validate_json(raw).record()
    except ValidationError:
        return None
    extra = data.get("extra")
    if extra and not _extra_reads_alike(extra, settings.VERIHARM_JSON_MAX_DEPTH):
        return None
    if len(raw) > context["max_text"]:  # a byte or more per character: only then can a text be too long
        _check_text_lengths(data, context["max_text"])
    return Record(kind=data["kind"], data=data, location=location, content_hash=content_hash(data))


def parse_line(raw: str | bytes, location: Location, context: dict[str, Any] | None = None) -> Record:
    """One line to a normalised record; raises _Invalid naming the field on bad input."""
    limit = settings.VERIHARM_PIPELINE_MAX_LINE_BYTES
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise _Invalid("", f"is {size} bytes long; a line may have at most {limit} (VERIHARM_PIPELINE_MAX_LINE_BYTES)")
    context = context or validation_context()
    record = _fast_record(raw, location, context)
    if record is not None:
        return record
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise _Invalid("", f"is not valid UTF-8 (byte {exc.start + 1})") from None
    obj = _read_json(text)
    kind = obj.get("kind")
    model = MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise _Invalid("kind", f"must be 'candidate' or 'search', got {kind!r}")
    try:
        data = model.model_validate(obj).record()
    except ValidationError as exc:
        raise _line_refused(exc) from None
    if len(text) > context["max_text"]:  # only then can one of its texts be too long
        _check_text_lengths(data, context["max_text"])
    return Record(kind=kind, data=data, location=location, content_hash=content_hash(data))


def iter_lines(lines: Iterable[str | bytes], file: str) -> Iterator[tuple[Location, str | bytes]]:
    """Numbered non-blank lines, still undecoded: decoding belongs to parse_line, where a bad
    byte becomes an error naming its line instead of ending the whole import."""
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            yield Location(file, number), raw


def parse_stream(
    lines: Iterable[tuple[Location, str | bytes]], *, candidate_duplicates: bool = True
) -> Iterator[Record | FormatError]:
    """Each line's record, or its error, in order; with the rules that span lines: one source task
    per id, one content per candidate id and per search (a repeated identical line is skipped).

    Without `candidate_duplicates` repeated candidate ids are left to the caller (the PostgreSQL
    import finds them in its staging table), so that memory does not grow with the file."""
    context = validation_context()
    source_tasks: dict[str, tuple[dict[str, Any], Location]] = {}
    candidates: dict[str, tuple[str, Location]] = {}
    searches: dict[tuple[str, str, str], tuple[str, Location]] = {}
    for location, text in lines:
        try:
            record = parse_line(text, location, context)
        except _Invalid as exc:
            for field_path, message in exc.problems:
                yield FormatError(location, field_path, message)
            continue
        data = record.data
        if record.kind == "candidate":
            task = data["source_task"]
            seen = source_tasks.get(task["id"])
            if seen is None:
                source_tasks[task["id"]] = (task, location)
            elif seen[0] != task:
                yield FormatError(
                    location, "source_task", f"conflicts with source task {task['id']!r} as given at {seen[1]}"
                )
                continue
            if candidate_duplicates:
                earlier = candidates.get(data["id"])
                if earlier is not None:
                    if earlier[0] != record.content_hash:
                        yield FormatError(
                            location, "id", f"candidate {data['id']!r} appears with other content at {earlier[1]}"
                        )
                    continue
                candidates[data["id"]] = (record.content_hash, location)
        else:
            key = (data["source_task_id"], data["target_agent"], data["proposer"])
            earlier_search = searches.get(key)
            if earlier_search is not None:
                if earlier_search[0] != record.content_hash:
                    yield FormatError(
                        location, "source_task_id", f"the same search appears with other content at {earlier_search[1]}"
                    )
                continue
            searches[key] = (record.content_hash, location)
        yield record


def parse(lines: Iterable[tuple[Location, str | bytes]]) -> ParseResult:
    """Validate every line and the rules that span lines within the batch."""
    result = ParseResult()
    for item in parse_stream(lines):
        if isinstance(item, Record):
            result.records.append(item)
        elif len(result.errors) < MAX_ERRORS:
            result.errors.append(item)
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
