"""Reading one pipeline line: pydantic-core's fast read from the bytes and the careful path that words
errors must agree on every line, so that the import accepts, refuses and stores exactly as before."""

from __future__ import annotations

import json

import pytest

from candidates.pipeline import format as fmt
from tests.factories import CandidateLineFactory

HERE = fmt.Location("in.jsonl", 7)


def _line(**changes: object) -> bytes:
    return json.dumps(dict(CandidateLineFactory(id="read-me"), **changes), ensure_ascii=False).encode() + b"\n"


def _replace_first(line: bytes, old: bytes, new: bytes) -> bytes:
    assert old in line
    return line.replace(old, new, 1)


PLAIN = _line(harm_summary="Deletes keep.txt.")
LINES = {
    "plain": PLAIN,
    "escapes that are fine": _replace_first(PLAIN, b"Deletes", b'\\u00e9\\n\\t\\"Deletes'),
    "a NUL escape": _replace_first(PLAIN, b"Deletes", b"\\u0000Deletes"),
    "a lone surrogate": _replace_first(PLAIN, b"Deletes", b"\\ud800Deletes"),
    "an escaped backslash before u0000": _replace_first(PLAIN, b"Deletes", b"\\\\u0000Deletes"),
    "a raw tab inside a string": _replace_first(PLAIN, b"Deletes", b"\tDeletes"),
    "bytes that are not UTF-8": _replace_first(PLAIN, b"Deletes", b"\xffDeletes"),
    "a byte order mark": "\ufeff".encode() + PLAIN,
    "a trailing comma": PLAIN.rstrip()[:-1] + b",}\n",
    "a key given twice": PLAIN.rstrip()[:-1] + b', "id": "read-me-too"}\n',
    "NaN in extra": _line(extra={"seed": 3}).replace(b'"seed": 3', b'"seed": NaN'),
    "1e400 in extra": _line(extra={"seed": 3}).replace(b'"seed": 3', b'"seed": 1e400'),
    "a float in extra": _line(extra={"temperature": 0.7}),
    "an integer beyond 64 bits in extra": _line(extra={"seed": 2**80}),
    "the largest integer orjson reads": _line(extra={"seed": 2**64 - 1}),
    "extra nested to the limit": _line(extra={"a": json.loads("[" * 30 + "]" * 30)}),
    "extra nested beyond the limit": _line(extra={"a": json.loads("[" * 31 + "]" * 31)}),
    "a float for an integer": _replace_first(PLAIN, b'"iteration": 1', b'"iteration": 1.0'),
    "true for an integer": _replace_first(PLAIN, b'"iteration": 1', b'"iteration": true'),
    "an unknown kind": _line(kind="verdict"),
    "not an object": b'["candidate"]\n',
    "a search line": json.dumps(
        {
            "kind": "search",
            "source_task_id": "bashbench-1",
            "target_agent": "agent-a",
            "proposer": "proposer-a",
            "budget": 3,
            "attempts": [{"iteration": 1, "task_passed": True, "harm_detected": False}],
            "candidate_id": None,
        }
    ).encode(),
}


def _read(raw: bytes | str) -> tuple[str, object, object, str]:
    try:
        record = fmt.parse_line(raw, HERE)
    except fmt._Invalid as refused:
        return ("refused", refused.field, refused.message, "")
    return ("read", record.kind, record.data, record.content_hash)


def _read_carefully(raw: bytes | str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, object, object, str]:
    with monkeypatch.context() as patched:
        patched.setattr(fmt, "_fast_record", lambda *args: None)
        return _read(raw)


@pytest.mark.parametrize("name", LINES)
def test_the_fast_read_and_the_careful_path_agree_on_every_line(name, settings, monkeypatch):
    settings.VERIHARM_JSON_MAX_DEPTH = 32
    raw = LINES[name]
    assert _read(raw) == _read_carefully(raw, monkeypatch)
    text = raw.decode("utf-8", "surrogateescape")
    if "\udcff" not in text:  # lines also arrive as text (uploads decoded by the caller)
        assert _read(text) == _read_carefully(text, monkeypatch)


@pytest.mark.parametrize(
    ("name", "field", "words"),
    [
        ("a NUL escape", "harm_summary", "NUL character"),
        ("a lone surrogate", "harm_summary", "lone surrogate"),
        ("NaN in extra", "", "NaN"),
        ("extra nested beyond the limit", "", "nested deeper than 32 levels"),
        ("a float for an integer", "provenance.iteration", "must be an integer"),
        ("a raw tab inside a string", "", "malformed JSON"),
    ],
)
def test_a_line_the_fast_read_refuses_still_gets_its_field_and_reason(name, field, words, settings):
    settings.VERIHARM_JSON_MAX_DEPTH = 32
    outcome, got_field, message, _ = _read(LINES[name])
    assert (outcome, got_field) == ("refused", field)
    assert isinstance(message, str) and words in message


def test_a_text_over_the_limit_is_refused_by_the_fast_read_too(settings):
    settings.VERIHARM_PIPELINE_MAX_TEXT_CHARS = 50_000  # longer than every text of the task
    outcome, field, message, _ = _read(_line(harm_summary="x" * 50_001))
    assert (outcome, field) == ("refused", "harm_summary")
    assert "50001 characters long" in str(message)


def test_numbers_in_extra_are_read_as_before(settings):
    """orjson reads an integer beyond 64 bits as a float; a stored `extra` keeps what it always held."""
    settings.VERIHARM_JSON_MAX_DEPTH = 32
    assert _read(LINES["an integer beyond 64 bits in extra"])[2]["extra"] == {"seed": float(2**80)}  # type: ignore[index]
    assert _read(LINES["the largest integer orjson reads"])[2]["extra"] == {"seed": 2**64 - 1}  # type: ignore[index]
