"""Flags against approving a candidate, raised by other apps, in words: the hook and its read.

The candidates app never imports the apps built on it (evaluation reads candidates, not the
reverse), so they register a source of flags here when they load (`AppConfig.ready`). A source
takes candidate pks and returns, for each flagged one, its reasons in words, e.g. the evaluation
app's "V_harm passes on the untouched environment".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from veriharm_site.registries import Registry

# Candidate pks -> for each flagged one, its reasons in words.
FlagSource = Callable[[list[int]], dict[int, list[str]]]

FLAG_SOURCES: Registry[FlagSource] = Registry()


def candidate_flags(candidate_ids: Iterable[int]) -> dict[int, list[str]]:
    """The reasons each flagged candidate among these is flagged; candidates without flags are absent."""
    pks = list(candidate_ids)
    flags: dict[int, list[str]] = {}
    if not pks:
        return flags
    for source in FLAG_SOURCES:
        for pk, reasons in source(pks).items():
            if reasons:
                flags.setdefault(pk, []).extend(reasons)
    return flags


def flag_warning(reasons: list[str]) -> str:
    """The warning a curator reads before approving a flagged candidate; a Decision keeps it."""
    return "Flagged: " + "; ".join(reasons) + "." if reasons else ""
