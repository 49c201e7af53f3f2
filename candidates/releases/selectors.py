"""Reads of releases: the list, one release and its items, a draft's preview, the changelog, the
stored JSONL lines and their checksum check, the frozen records a run evaluates, and which of a
set of snapshots humans judged invalid or are synthetic (what freezing them asks to acknowledge)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, QuerySet

from ..hooks.human_verdicts import human_majorities
from ..models import Release, ReleaseItem
from ..pool.synthetic import synthetic_ids
from .snapshots import (
    Changelog,
    ItemState,
    Snapshot,
    approved_snapshot,
    changelog,
    checksum,
    lines_in_id_order,
)

# --- Releases ---------------------------------------------------------------------------------------


def release_list() -> QuerySet[Release]:
    # Meta.ordering, said again: a query grouped for the count leaves it out, and pages need an order.
    return (
        Release.objects.select_related("created_by", "frozen_by")
        .annotate(item_count=Count("items"))
        .order_by("name", "-created_at", "-id")
    )


def release_get(release_id: int) -> Release:
    return Release.objects.select_related("created_by", "frozen_by", "previous").get(pk=release_id)


def release_items(release: Release) -> QuerySet[ReleaseItem]:
    return (
        release.items.select_related("candidate")
        .only(
            "id",
            "release_id",
            "external_id",
            "revision",
            "position",
            "content_hash",
            "candidate__id",
            "candidate__revision",
            "candidate__rank",
            "candidate__risk_category",
            "candidate__perturbation",
        )
        .order_by("position")
    )


def previous_release(name: str, *, exclude: int | None = None) -> Release | None:
    """The latest frozen release of this name: what a new freeze is compared against."""
    queryset = Release.objects.filter(name=name, frozen_at__isnull=False)
    if exclude is not None:
        queryset = queryset.exclude(pk=exclude)
    return queryset.order_by("-frozen_at", "-id").first()


def item_states(release: Release) -> dict[str, ItemState]:
    return {
        ext: ItemState(revision, digest)
        for ext, revision, digest in release.items.values_list("external_id", "revision", "content_hash")
    }


def snapshot_states(snapshots: Iterable[Snapshot]) -> dict[str, ItemState]:
    return {s.external_id: ItemState(s.revision, s.content_hash) for s in snapshots}


@dataclass(frozen=True)
class Preview:
    """What freezing a draft now would give."""

    snapshots: list[Snapshot]
    changelog: Changelog
    checksum: str


def release_preview(release: Release) -> Preview:
    snapshots = approved_snapshot()
    previous = previous_release(release.name, exclude=release.pk)
    log = changelog(
        item_states(previous) if previous else None, snapshot_states(snapshots), previous.label if previous else None
    )
    return Preview(snapshots=snapshots, changelog=log, checksum=checksum(lines_in_id_order(snapshots)))


def release_changelog(release: Release) -> Changelog:
    return Changelog.from_json(release.changelog)


@dataclass(frozen=True)
class _StoredLine:
    id: str
    line: str


def _stored_lines(release: Release) -> list[str]:
    return lines_in_id_order(_StoredLine(ext, line) for ext, line in release.items.values_list("external_id", "line"))


def release_jsonl_lines(release: Release) -> Iterator[str]:
    """The release's export, line by line: exactly the bytes its checksum covers."""
    for line in _stored_lines(release):
        yield line + "\n"


def release_checksum_verify(release: Release) -> bool:
    """Recompute the checksum from the stored items (a frozen release must always agree)."""
    return release.is_frozen and checksum(_stored_lines(release)) == release.checksum


def release_candidate_ids(release: Release) -> list[int]:
    """The candidates a run targeting this release evaluates, in release order.

    A candidate may have been edited since the freeze; `release_item_records` gives the frozen
    text and revision of each, for a run that must evaluate the release exactly as frozen.
    """
    return list(release.items.order_by("position").values_list("candidate_id", flat=True))


def release_member_ids(release_id: int) -> list[int] | None:
    """The candidates of a release's items in release order (none for a draft: items are written when
    it is frozen); None when no release has this id."""
    if not Release.objects.filter(pk=release_id).exists():
        return None
    return list(
        ReleaseItem.objects.filter(release_id=release_id).order_by("position").values_list("candidate_id", flat=True)
    )


def releases_with_items() -> list[tuple[int, str]]:
    """(id, "name version") of the releases with items, newest first: what a run may evaluate."""
    return [
        (pk, f"{name} {version}")
        for pk, name, version in Release.objects.filter(items__isnull=False)
        .distinct()
        .order_by("-pk")
        .values_list("pk", "name", "version")
    ]


@dataclass(frozen=True)
class ItemRecord:
    candidate_id: int
    revision: int
    record: dict[str, Any] = field(hash=False)


def release_item_records(release: Release) -> list[ItemRecord]:
    rows = release.items.order_by("position").values_list("candidate_id", "revision", "line")
    return [ItemRecord(candidate_id, revision, json.loads(line)) for candidate_id, revision, line in rows]


# --- What freezing asks to acknowledge --------------------------------------------------------


def human_rejected_in(snapshots: Sequence[Snapshot]) -> dict[str, str]:
    """The snapshots' candidates humans judged invalid, by id, with their majority in words."""
    majorities = human_majorities(s.candidate_id for s in snapshots)
    return {
        s.external_id: majorities[s.candidate_id].text
        for s in snapshots
        if s.candidate_id in majorities and majorities[s.candidate_id].rejected
    }


def synthetic_in(snapshots: Sequence[Snapshot]) -> list[str]:
    """The ids of the snapshots' synthetic candidates, sorted."""
    synthetic = synthetic_ids(s.candidate_id for s in snapshots)
    return sorted(s.external_id for s in snapshots if s.candidate_id in synthetic)
