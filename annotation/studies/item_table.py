"""The per-item table of a study's results as a curator narrows it: sorted, filtered and searched.

Pure: it works on the item rows the results page already holds (a study is a few hundred items),
so narrowing the table costs no query and the figures above it still cover every item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..models import Group
from .selectors.results import ItemRow

ITEM_SORTS = {
    "item": "item number",
    "-item": "item number, last first",
    "majority": "majority: valid, invalid, none yet",
    "-majority": "majority: none yet, invalid, valid",
    "agreement": "agreement, most disputed first",
    "-agreement": "agreement, unanimous first",
    "quality": "Q, lowest first",
    "-quality": "Q, highest first",
    "time": "median time, quickest first",
    "-time": "median time, slowest first",
}
MAJORITIES = ("valid", "invalid", "none")
GROUPS = (Group.TOP.value, Group.BOTTOM.value)


def _majority_order(row: ItemRow) -> int:
    return {True: 0, False: 1, None: 2}[row.valid_agg]


def _time(row: ItemRow) -> float:
    seconds = row.median_seconds
    return float("inf") if seconds is None else seconds  # items nobody labelled yet sort last


_KEYS: dict[str, Callable[[ItemRow], Any]] = {
    "item": lambda row: row.number,
    "majority": _majority_order,
    "agreement": lambda row: -row.disagreement,
    "quality": lambda row: row.quality,
    "time": _time,
}
_MAJORITY = {"valid": True, "invalid": False, "none": None}


def _matches(row: ItemRow, query: dict[str, Any]) -> bool:
    if query["majority"] and row.valid_agg is not _MAJORITY[query["majority"]]:
        return False
    if query["disputed"] and row.disagreement == 0:
        return False
    if query["gold"] and row.gold is None:
        return False
    if query["adjudicated"] and row.adjudication is None:
        return False
    if query["group"] and row.group != query["group"]:
        return False
    words = query["q"].strip().casefold()
    return not words or words in row.candidate_external_id.casefold() or words in row.source_task.casefold()


def item_table(rows: list[ItemRow], query: dict[str, Any]) -> list[ItemRow]:
    """The rows `query` (a validated `ItemsQuery`) keeps, in its order; ties keep the item order."""
    kept = [row for row in rows if _matches(row, query)]
    sort = query["sort"] or "item"
    key = _KEYS[sort.lstrip("-")]
    by_number = sorted(kept, key=lambda row: row.number)
    # Python's sort is stable: sorting by number first leaves equal keys in item order.
    return sorted(by_number, key=key, reverse=sort.startswith("-"))
