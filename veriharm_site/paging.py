"""Paging a large ordered queryset by reading the page's keys first, then only its rows.

An OFFSET over whole rows reads (and often sorts) every row before the page; the keys alone come
from an index, or from a narrow sort, and the rows that are then read with their joins and
annotations are the page's fifty. A `Paginator` (and DRF's page-number pagination) walks this
like a queryset.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import overload

from django.db.models import Model, QuerySet


class PagedRows[M: Model](ABC):
    """What a `Paginator` walks without an OFFSET: a subclass counts its rows and reads a window
    of them; indexing and iterating come from that."""

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def _window(self, window: slice) -> list[M]: ...

    def __len__(self) -> int:
        return self.count()

    def __iter__(self) -> Iterator[M]:
        return iter(self._window(slice(0, self.count())))

    @overload
    def __getitem__(self, index: int) -> M: ...

    @overload
    def __getitem__(self, index: slice) -> list[M]: ...

    def __getitem__(self, index: int | slice) -> M | list[M]:
        if isinstance(index, slice):
            return self._window(index)
        found = self._window(slice(index, index + 1))
        if not found:
            raise IndexError(index)
        return found[0]


class KeysFirst[M: Model](PagedRows[M]):
    def __init__(
        self, queryset: QuerySet[M], key: str = "pk", rows: Callable[[QuerySet[M]], QuerySet[M]] | None = None
    ) -> None:
        """`queryset` is ordered and `key` unique in it; `rows` adds what only the page's rows need."""
        self.queryset = queryset
        self.key = key
        self.rows = rows

    def count(self) -> int:
        return self.queryset.count()

    def _window(self, window: slice) -> list[M]:
        keys = list(self.queryset.values_list(self.key, flat=True)[window])
        page = self.queryset.filter(**{f"{self.key}__in": keys})
        found = {getattr(row, self.key): row for row in (self.rows(page) if self.rows else page)}
        return [found[key] for key in keys]
