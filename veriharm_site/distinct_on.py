"""The first row of each group of an ordered query: PostgreSQL's DISTINCT ON where the database has
it, else the same rows picked while reading (the embedded SQLite of `make run`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from django.db import connection
from django.db.models import QuerySet


def first_of_each(ordered: QuerySet[Any], fields: tuple[str, ...], key: Callable[[Any], Hashable]) -> list[Any]:
    """The first row of each group of `fields` in `ordered`, which must be ordered by `fields` first;
    `key(row)` gives those fields' values of a row (a model instance or a values_list tuple)."""
    if connection.features.can_distinct_on_fields:
        return list(ordered.distinct(*fields))
    seen: set[Hashable] = set()
    first = []
    for row in ordered:
        group = key(row)
        if group not in seen:
            seen.add(group)
            first.append(row)
    return first
