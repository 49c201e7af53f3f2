"""How a transcript and an agent's configuration read on a trial page: one line per step, folded
text, and JSON indented. Pure: no database, no request."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# A step's line holds this much of its command (or message); the rest is in the folded text.
HEADLINE_CHARS = 160


@dataclass(frozen=True)
class Headline:
    text: str
    more_lines: int  # lines of the command or message past the first
    cut: bool  # the first line itself was longer than the headline


def headline(command: str, content: str) -> Headline:
    """The one line a folded step shows: its command's first line, or a message's (a harness
    note, a model's answer) when it ran no command."""
    text = command if command.strip() else content
    lines = [line for line in text.strip().splitlines() if line.strip()] or [""]
    first = lines[0].strip()
    cut = len(first) > HEADLINE_CHARS
    return Headline(first[:HEADLINE_CHARS] + ("…" if cut else ""), len(lines) - 1, cut)


@dataclass(frozen=True)
class ConfigPart:
    key: str
    text: str
    block: bool  # shown on lines of its own (a script, a nested object), not beside its key


def config_parts(config: dict[str, Any], prefix: str = "") -> list[ConfigPart]:
    """An agent's configuration key by key, nested objects by their dotted path (config.command):
    numbers and one-line strings as JSON beside their key, lists as indented JSON, and text of
    several lines (a command's script) as it reads, not as one JSON string of escaped newlines."""
    parts = []
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            parts.extend(config_parts(value, f"{path}."))
        elif isinstance(value, str) and "\n" in value:
            parts.append(ConfigPart(path, value, True))
        elif isinstance(value, list) and value:
            parts.append(ConfigPart(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False), True))
        else:
            parts.append(ConfigPart(path, json.dumps(value, ensure_ascii=False), False))
    return parts


def snippet(text: str, search: str, width: int = 60) -> str:
    """The words around the first occurrence of `search` in `text` (empty when there is none),
    on one line: where a folded step matched."""
    at = text.lower().find(search.lower()) if search else -1
    if at < 0:
        return ""
    start, end = max(at - width, 0), min(at + len(search) + width, len(text))
    around = " ".join(text[start:end].split())
    return ("…" if start else "") + around + ("…" if end < len(text) else "")


def embedded_json(text: str, min_chars: int = 200) -> list[tuple[str, str]]:
    """The text cut where a long JSON object or array is written into it (a playbook passed to a
    program as a string literal): (kind, text) pieces, "text" as written and "json" indented, so a
    line of thousands of escaped characters reads as a structure."""
    pieces: list[tuple[str, str]] = []
    decoder = json.JSONDecoder()
    at = 0
    for found in _LITERAL.finditer(text):
        literal = found.group(0)
        if len(literal) < min_chars:
            continue
        value = _json_in_literal(literal, decoder)
        if value is None:
            continue
        pieces.append(("text", text[at : found.start()]))
        pieces.append(("json", json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)))
        at = found.end()
    pieces.append(("text", text[at:]))
    return [piece for piece in pieces if piece[1]]


# A quoted string (single or double, backslash escapes) whose text starts like JSON.
_LITERAL = re.compile(r"""'[\[{](?:[^'\\\n]|\\.)*'|"[\[{](?:[^"\\\n]|\\.)*\"""")


def _json_in_literal(literal: str, decoder: json.JSONDecoder) -> Any:
    """The object or array a quoted literal holds, read as a Python/shell string, or None."""
    body = literal[1:-1]
    try:
        # The literal's escapes (\\n, \', \") are a string's, undone before the JSON is read.
        unquoted = body.encode("latin-1", "backslashreplace").decode("unicode_escape")
        value, end = decoder.raw_decode(unquoted)
    except (ValueError, UnicodeError):
        return None
    return value if end == len(unquoted) and isinstance(value, dict | list) else None


def marked(text: str, search: str) -> SafeString:
    """`text` escaped, with each case-insensitive occurrence of `search` in a <mark>."""
    if not search:
        return escape(text)
    pieces = re.split(f"({re.escape(search)})", text, flags=re.IGNORECASE)
    return mark_safe(  # noqa: S308 - every piece is escaped
        "".join(f"<mark>{escape(piece)}</mark>" if index % 2 else escape(piece) for index, piece in enumerate(pieces))
    )
