"""What a release holds, computed: the changelog against the previous release (pure), each approved
candidate's record as a snapshot, the JSONL lines in id order and their checksum. Shared by the
release services (freezing writes the snapshots) and selectors (a draft's preview)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..curation.selectors import approved_candidates
from ..models import Candidate
from ..pipeline import format as fmt
from ..pool.records import candidate_to_record
from ..pool.selectors import judgements_prefetch

# --- Changelog (pure) --------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemState:
    revision: int
    content_hash: str


@dataclass(frozen=True)
class ChangelogEntry:
    id: str
    revision: int
    previous_revision: int | None = None


@dataclass(frozen=True)
class Changelog:
    previous: str | None  # the label of the release compared against, None for a first release
    added: tuple[ChangelogEntry, ...] = ()
    removed: tuple[ChangelogEntry, ...] = ()
    changed: tuple[ChangelogEntry, ...] = ()
    unchanged: int = 0

    def as_json(self) -> dict[str, Any]:
        def entries(items: Sequence[ChangelogEntry]) -> list[dict[str, Any]]:
            return [
                {"id": e.id, "revision": e.revision}
                | ({"previous_revision": e.previous_revision} if e.previous_revision is not None else {})
                for e in items
            ]

        return {
            "previous": self.previous,
            "added": entries(self.added),
            "removed": entries(self.removed),
            "changed": entries(self.changed),
            "unchanged": self.unchanged,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Changelog:
        def entries(key: str) -> tuple[ChangelogEntry, ...]:
            return tuple(ChangelogEntry(e["id"], e["revision"], e.get("previous_revision")) for e in data.get(key, []))

        return cls(
            previous=data.get("previous"),
            added=entries("added"),
            removed=entries("removed"),
            changed=entries("changed"),
            unchanged=data.get("unchanged", 0),
        )


def changelog(
    previous: Mapping[str, ItemState] | None, current: Mapping[str, ItemState], previous_label: str | None
) -> Changelog:
    """Instances added, removed and changed (other content) since the previous release, by id."""
    if previous is None:
        added = tuple(ChangelogEntry(i, current[i].revision) for i in sorted(current))
        return Changelog(previous=None, added=added)
    added = tuple(ChangelogEntry(i, current[i].revision) for i in sorted(current.keys() - previous.keys()))
    removed = tuple(ChangelogEntry(i, previous[i].revision) for i in sorted(previous.keys() - current.keys()))
    both = sorted(current.keys() & previous.keys())
    changed = tuple(
        ChangelogEntry(i, current[i].revision, previous[i].revision)
        for i in both
        if current[i].content_hash != previous[i].content_hash
    )
    return Changelog(
        previous=previous_label, added=added, removed=removed, changed=changed, unchanged=len(both) - len(changed)
    )


# --- Snapshots and checksums ---------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """What a release item will hold: one candidate's record at one revision."""

    candidate_id: int
    external_id: str
    revision: int
    line: str  # canonical JSON of the pipeline record
    position: int

    @property
    def id(self) -> str:
        return self.external_id

    @property
    def content_hash(self) -> str:
        # The same hash the import gives the line, so an unedited item matches Candidate.content_hash.
        return hashlib.sha256(self.line.encode("utf-8")).hexdigest()


def jsonl_bytes(lines: Iterable[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


class _HasLine(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def line(self) -> str: ...


def lines_in_id_order(items: Iterable[_HasLine]) -> list[str]:
    """Code point order, in Python: a database collation could order ids differently."""
    return [item.line for item in sorted(items, key=lambda item: item.id)]


def checksum(lines_by_id: Iterable[str]) -> str:
    return hashlib.sha256(jsonl_bytes(lines_by_id)).hexdigest()


def candidate_snapshot(candidate: Candidate, position: int) -> Snapshot:
    """One candidate's current record (judgements prefetched) as a snapshot."""
    return Snapshot(
        candidate_id=candidate.pk,
        external_id=candidate.external_id,
        revision=candidate.revision,
        line=fmt.canonical_json(candidate_to_record(candidate)),
        position=position,
    )


def approved_snapshot(*, lock: bool = False) -> list[Snapshot]:
    """Every approved candidate's current record, in rank order (unranked last)."""
    queryset = approved_candidates().select_related("source_task").prefetch_related(judgements_prefetch())
    if lock:
        # Edits and decisions lock the candidate row too: none can slip in while a freeze reads.
        queryset = queryset.select_for_update(of=("self",))
    return [candidate_snapshot(candidate, position) for position, candidate in enumerate(queryset, start=1)]
