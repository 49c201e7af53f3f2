"""A registry: what an app plugs into another at start-up, written once for every hook.

An app built on another registers here in its `AppConfig.ready`, so the app it plugs into reads
the entries without importing it. `ready()` may run more than once in a process (tests, a reload),
so an entry registered again is kept once. Reads take the entries as they stand, in their order.
"""

from __future__ import annotations

from collections.abc import Iterator


class Registry[T]:
    """Entries read by their `order`, then in the order they came."""

    def __init__(self) -> None:
        self._entries: list[tuple[int, T]] = []

    def register(self, entry: T, *, order: int = 0) -> None:
        if any(existing == entry for _, existing in self._entries):
            return
        self._entries.append((order, entry))
        self._entries.sort(key=lambda ordered: ordered[0])

    def __iter__(self) -> Iterator[T]:
        return iter([entry for _, entry in self._entries])

    def __bool__(self) -> bool:
        return bool(self._entries)
