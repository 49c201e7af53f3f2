"""Side-by-side diffs of t_seed and t~ for people (pure).

diff-match-patch works on characters; a raw character diff of two instructions is
confetti. Tokenising into words and whitespace first (the library's line-mode trick
applied to words: each token mapped to one character), then semantic cleanup on those
characters, gives edits of whole words a reader can follow; no word is ever split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

from diff_match_patch import diff_match_patch

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Segment:
    kind: str  # "equal", "delete" or "insert"
    text: str


@dataclass(frozen=True)
class SideBySide:
    left: list[Segment]  # the source task t_seed: equal and deleted text
    right: list[Segment]  # the perturbed task t~: equal and inserted text
    inserted_words: int
    deleted_words: int

    @property
    def changed(self) -> bool:
        return bool(self.inserted_words or self.deleted_words)


def _words_to_chars(a: str, b: str) -> tuple[str, str, list[str]]:
    table: list[str] = [""]
    index: dict[str, int] = {}

    def encode(text: str) -> str:
        out = []
        for token in _TOKEN.findall(text):
            if token not in index:
                index[token] = len(table)
                table.append(token)
            out.append(chr(index[token]))
        return "".join(out)

    return encode(a), encode(b), table


def diff_segments(before: str, after: str) -> list[Segment]:
    dmp = diff_match_patch()
    dmp.Diff_Timeout = 2.0
    a, b, table = _words_to_chars(before, after)
    diffs = dmp.diff_main(a, b, False)
    # Cleaned up while each character still stands for a whole token: run on the decoded text,
    # the cleanup's overlap and boundary shifts would cut words ("seven" -> "seven" + "ty").
    dmp.diff_cleanupSemantic(diffs)
    dmp.diff_charsToLines(diffs, table)
    kinds = {0: "equal", -1: "delete", 1: "insert"}
    segments: list[Segment] = []
    for op, text in diffs:
        if not text:
            continue
        if segments and segments[-1].kind == kinds[op]:
            segments[-1] = Segment(kinds[op], segments[-1].text + text)
        else:
            segments.append(Segment(kinds[op], text))
    return segments


def side_by_side(before: str, after: str) -> SideBySide:
    segments = diff_segments(before, after)
    left = [s for s in segments if s.kind != "insert"]
    right = [s for s in segments if s.kind != "delete"]
    count = lambda kind: sum(len(re.findall(r"\w+", s.text)) for s in segments if s.kind == kind)  # noqa: E731
    return SideBySide(left=left, right=right, inserted_words=count("insert"), deleted_words=count("delete"))


def search_text(external_id: str, added_words: str) -> str:
    """What the ranking's search matches a candidate by: its id and the words its edit added."""
    return f"{external_id} {added_words}"


class AddedWords:
    """The words of t~ that t_seed lacks, lower-cased, in order, once each. Cheap enough for every candidate
    of a large import (a full diff is not), and what a search for an edit needs. Remembers the
    word set of each t_seed, which many candidates share."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[frozenset[str], frozenset[str]]] = {}

    def __call__(self, before: str, after: str) -> str:
        known = self._known.get(before)
        if known is None:
            known = self._known[before] = (
                frozenset(before.splitlines()),
                frozenset(_WORD.findall(before.lower())),
            )
        lines, words = known
        # A line that t_seed has word for word adds no word: only the others need reading.
        changed = "\n".join(line for line in after.splitlines() if line not in lines)
        # Lower-cased: the search that reads this is case-insensitive anyway.
        return " ".join(w for w in dict.fromkeys(_WORD.findall(changed.lower())) if w not in words)


def segments_html(segments: list[Segment]) -> str:
    """Inserted and deleted text is coloured and also marked with <ins>/<del>, which show
    for colour-blind readers as underline and strike-through plus a text label."""
    parts = []
    for segment in segments:
        text = escape(segment.text)
        if segment.kind == "insert":
            parts.append(f'<ins class="diff-ins" title="added">{text}</ins>')
        elif segment.kind == "delete":
            parts.append(f'<del class="diff-del" title="removed">{text}</del>')
        else:
            parts.append(text)
    return "".join(parts)
