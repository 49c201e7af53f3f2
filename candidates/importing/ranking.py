"""The ranking rule, written once: Q descending, then the id in code-point order; no Q, no rank.

`RANK_ORDER` is the definition. The portable writer sorts by `rank_key`, the PostgreSQL writer
orders its window function by `rank_order_sql()`; both are read off the same tuple, so the two
databases cannot rank differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..models import Candidate


@dataclass(frozen=True)
class RankColumn:
    column: str
    descending: bool = False
    # Text compares by code point: Python's str order, PostgreSQL's "C" collation (UTF-8 bytes
    # sort in code-point order), whatever the database's own collation.
    text: bool = False


# The first column must be present for a row to be ranked.
RANK_ORDER: tuple[RankColumn, ...] = (
    RankColumn("quality", descending=True),
    RankColumn("external_id", text=True),
)


def rank_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The sort key of a ranked row (one with a Q)."""
    # Descending columns are numbers (Q): negation orders them high first.
    return tuple(-row[c.column] if c.descending else row[c.column] for c in RANK_ORDER)


def is_ranked(row: Mapping[str, Any]) -> bool:
    return row[RANK_ORDER[0].column] is not None


def rank_order_sql(alias: str = "") -> str:
    """The ORDER BY of the ranking's window, over columns of that name (optionally qualified)."""
    prefix = f"{alias}." if alias else ""
    terms = []
    for c in RANK_ORDER:
        term = prefix + c.column
        if c.text:
            term += ' COLLATE "C"'
        terms.append(term + (" DESC NULLS LAST" if c.descending else " ASC NULLS LAST"))
    return ", ".join(terms)


def rank_sql(alias: str = "") -> str:
    """The rank of each row of a pool as an SQL expression: NULL without a Q."""
    first = (f"{alias}." if alias else "") + RANK_ORDER[0].column
    return f"CASE WHEN {first} IS NOT NULL THEN row_number() OVER (ORDER BY {rank_order_sql(alias)}) END"


def ranks_after_import(
    new: dict[str, float | None], replaced: dict[int, float | None]
) -> tuple[dict[str, int | None], dict[int, int | None]]:
    """The ranking with this import's candidates in it: ranks for the new candidates (by id), and
    the stored candidates (by key) whose rank changes. Computed before writing, so that new rows
    are written once, already ranked."""
    entries: list[tuple[tuple[Any, ...], int | None, str]] = []
    current: dict[int, int | None] = {}
    for pk, external_id, quality, rank in Candidate.objects.values_list("pk", "external_id", "quality", "rank"):
        current[pk] = rank
        row = {"quality": replaced.get(pk, quality), "external_id": external_id}
        if is_ranked(row):
            entries.append((rank_key(row), pk, external_id))
    for external_id, quality in new.items():
        row = {"quality": quality, "external_id": external_id}
        if is_ranked(row):
            entries.append((rank_key(row), None, external_id))
    entries.sort()
    new_ranks: dict[str, int | None] = dict.fromkeys(new)
    stored_ranks: dict[int, int | None] = dict.fromkeys(current)
    for position, (_, stored_pk, external_id) in enumerate(entries, start=1):
        if stored_pk is None:
            new_ranks[external_id] = position
        else:
            stored_ranks[stored_pk] = position
    return new_ranks, {pk: rank for pk, rank in stored_ranks.items() if current[pk] != rank}
