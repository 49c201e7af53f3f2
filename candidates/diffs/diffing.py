"""Side-by-side diffs of t_seed and t~ for people (pure).

diff-match-patch works on characters; a raw character diff of two instructions is
confetti. Tokenising into words and whitespace first (the library's line-mode trick
applied to words: each token mapped to one character), then semantic cleanup on those
characters, gives edits of whole words a reader can follow; no word is ever split.

A page that shows a diff waits for it, so `bounded_side_by_side` bounds its cost: diff-match-patch's
work grows with the product of the texts' lengths and their edits (two unrelated 5,000-character
texts take most of a second word by word), so longer texts are compared line by line (the same
trick on lines: a few thousand lines at most), each comparison stops at `DIFF_TIMEOUT` (the rest
then shows as one deletion and one insertion), and texts longer than `MAX_DIFF_CHARS` are not
compared at all: the page says so and links to the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape

from diff_match_patch import diff_match_patch

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")
_WORD = re.compile(r"\w+")

# How a bounded diff compared its texts.
WORDS, LINES, TOO_LARGE = "words", "lines", "too_large"
# Seconds diff-match-patch may spend on one comparison before it settles for a coarser diff.
DIFF_TIMEOUT = 0.25
# Word by word while each text has at most this many tokens (words, spaces, signs): two unrelated
# texts of that size reach DIFF_TIMEOUT, texts that share most of their words take milliseconds;
# beyond it, line by line (an 80,000-character text: a few hundred lines, well under the timeout).
WORD_MODE_MAX_TOKENS = 2_000
# No comparison beyond this many characters in either text: the proposer's and the pipeline
# format's limit on one text, so any proposal within them is compared.
MAX_DIFF_CHARS = 100_000


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
    mode: str = WORDS  # WORDS, LINES, or TOO_LARGE (not compared: no segments)

    @property
    def changed(self) -> bool:
        return bool(self.inserted_words or self.deleted_words)

    @property
    def too_large(self) -> bool:
        return self.mode == TOO_LARGE


def _words_to_chars(a: str, b: str, token: re.Pattern[str] = _TOKEN) -> tuple[str, str, list[str]]:
    table: list[str] = [""]
    index: dict[str, int] = {}

    def encode(text: str) -> str:
        out = []
        for token_text in token.findall(text):
            if token_text not in index:
                index[token_text] = len(table)
                table.append(token_text)
            out.append(chr(index[token_text]))
        return "".join(out)

    return encode(a), encode(b), table


def diff_segments(before: str, after: str) -> list[Segment]:
    return _segments(*_words_to_chars(before, after), timeout=2.0)


def _segments(a: str, b: str, table: list[str], *, timeout: float) -> list[Segment]:
    """The diff of two texts encoded a character per token (`_words_to_chars`), decoded."""
    dmp = diff_match_patch()
    dmp.Diff_Timeout = timeout
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
    return _side_by_side(diff_segments(before, after), WORDS)


def _side_by_side(segments: list[Segment], mode: str) -> SideBySide:
    left = [s for s in segments if s.kind != "insert"]
    right = [s for s in segments if s.kind != "delete"]
    count = lambda kind: sum(len(_WORD.findall(s.text)) for s in segments if s.kind == kind)  # noqa: E731
    return SideBySide(left=left, right=right, inserted_words=count("insert"), deleted_words=count("delete"), mode=mode)


def bounded_side_by_side(before: str, after: str) -> SideBySide:
    """`side_by_side` at a bounded cost, for pages: word by word for texts of up to
    WORD_MODE_MAX_TOKENS tokens, line by line for longer ones, each comparison cut at DIFF_TIMEOUT;
    not compared at all (TOO_LARGE) beyond MAX_DIFF_CHARS characters."""
    if len(before) > MAX_DIFF_CHARS or len(after) > MAX_DIFF_CHARS:
        return SideBySide(left=[], right=[], inserted_words=0, deleted_words=0, mode=TOO_LARGE)
    a, b, table = _words_to_chars(before, after)
    if max(len(a), len(b)) <= WORD_MODE_MAX_TOKENS:
        return _side_by_side(_segments(a, b, table, timeout=DIFF_TIMEOUT), WORDS)
    return _side_by_side(_segments(*_words_to_chars(before, after, _LINE), timeout=DIFF_TIMEOUT), LINES)


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
