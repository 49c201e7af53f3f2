"""Source and perturbed task aligned line by line, for the labelling page and the curators' item page
(pure: no database).

diff-match-patch in line mode pairs equal lines; a run of removed lines followed by a run of added
lines is a changed block, whose lines are paired in order and marked word by word inside, so that a
one-sentence perturbation deep in a long task shows as one highlighted row beside its original.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from diff_match_patch import diff_match_patch

from candidates.diffs.diffing import Segment, diff_segments, segments_html

EQUAL, CHANGE, REMOVED, ADDED = "equal", "change", "removed", "added"


@dataclass(frozen=True)
class AlignedRow:
    kind: str  # equal, change (both sides, edited), removed (left only) or added (right only)
    left_number: int | None
    right_number: int | None
    left_html: str
    right_html: str

    @property
    def changed(self) -> bool:
        return self.kind != EQUAL


@dataclass(frozen=True)
class UnifiedLine:
    sign: str  # " ", "-" or "+"
    number: int
    html: str


@dataclass(frozen=True)
class AlignedDiff:
    rows: list[AlignedRow]

    @property
    def changes(self) -> int:
        """Blocks of consecutive changed rows: what the "next change" key steps through."""
        blocks, inside = 0, False
        for row in self.rows:
            if row.changed and not inside:
                blocks += 1
            inside = row.changed
        return blocks

    @property
    def unified(self) -> list[UnifiedLine]:
        lines: list[UnifiedLine] = []
        for row in self.rows:
            if row.kind == EQUAL:
                lines.append(UnifiedLine(" ", row.right_number or 0, row.right_html))
                continue
            if row.left_number is not None:
                lines.append(UnifiedLine("-", row.left_number, row.left_html))
            if row.right_number is not None:
                lines.append(UnifiedLine("+", row.right_number, row.right_html))
        return lines


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _marked(segments: list[Segment], drop: str) -> str:
    return segments_html([s for s in segments if s.kind != drop])


def aligned_diff(before: str, after: str) -> AlignedDiff:
    dmp = diff_match_patch()
    dmp.Diff_Timeout = 2.0
    # Each line keeps its newline so that the last line without one still counts as a line.
    a, b, table = dmp.diff_linesToChars(before, after)
    diffs = dmp.diff_main(a, b, False)
    dmp.diff_charsToLines(diffs, table)
    rows: list[AlignedRow] = []
    left_no = right_no = 0
    removed: list[str] = []

    def flush(added: list[str]) -> None:
        nonlocal left_no, right_no
        for index in range(max(len(removed), len(added))):
            old = removed[index] if index < len(removed) else None
            new = added[index] if index < len(added) else None
            if old is not None and new is not None:
                segments = diff_segments(old, new)
                left_no += 1
                right_no += 1
                rows.append(
                    AlignedRow(CHANGE, left_no, right_no, _marked(segments, "insert"), _marked(segments, "delete"))
                )
            elif old is not None:
                left_no += 1
                rows.append(
                    AlignedRow(REMOVED, left_no, None, f'<del class="diff-del" title="removed">{escape(old)}</del>', "")
                )
            elif new is not None:
                right_no += 1
                rows.append(
                    AlignedRow(ADDED, None, right_no, "", f'<ins class="diff-ins" title="added">{escape(new)}</ins>')
                )
        removed.clear()

    for op, text in diffs:
        lines = _lines(text.removesuffix("\n")) if text else []
        if op == -1:
            removed.extend(lines)
        elif op == 1:
            flush(lines)
        else:
            flush([])
            for line in lines:
                left_no += 1
                right_no += 1
                html = escape(line)
                rows.append(AlignedRow(EQUAL, left_no, right_no, html, html))
    flush([])
    return AlignedDiff(rows)
