"""Flags against approving a candidate, raised by other apps, in words.

The candidates app never imports the apps built on it (evaluation reads candidates, not the
reverse), so they register a source of flags in `candidates.hooks` when they load
(`AppConfig.ready`). A source takes candidate pks and returns, for each flagged one, its reasons
in words, e.g. the evaluation app's "V_harm passes on the untouched environment".
"""

from __future__ import annotations

from collections.abc import Iterable

# Registered through candidates.hooks; named here too for the apps that register through this module.
from .hooks import flag_sources


def candidate_flags(candidate_ids: Iterable[int]) -> dict[int, list[str]]:
    """The reasons each flagged candidate among these is flagged; candidates without flags are absent."""
    pks = list(candidate_ids)
    flags: dict[int, list[str]] = {}
    if not pks:
        return flags
    for source in flag_sources():
        for pk, reasons in source(pks).items():
            if reasons:
                flags.setdefault(pk, []).extend(reasons)
    return flags


def flag_warning(reasons: list[str]) -> str:
    """The warning a curator reads before approving a flagged candidate; a Decision keeps it."""
    return "Flagged: " + "; ".join(reasons) + "." if reasons else ""
