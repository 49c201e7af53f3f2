"""Releases: the approved set frozen as a named, versioned benchmark.

A draft release is a name, a version and a description. Freezing it snapshots every
approved candidate's pipeline record at its current revision into release items, writes
the changelog against the previous frozen release of the same name and the checksum, and
from then on the models refuse any change (see `ReleaseFrozen`).

The checksum is the sha256 of the release's JSONL export: one canonical JSON line
(sorted keys, no spaces) per item, in id order, each ending in a newline. So
`sha256sum veriharm-bench-1.0.jsonl` on a downloaded export gives the checksum shown in the
application, and the checksum is recomputable from the stored lines at any time.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from veriharm_site.refusals import Refused

from ..curation.review import approved_candidates
from ..human_verdicts import human_majorities
from ..models import (
    RELEASE_NAME_PATTERN,
    RELEASE_VERSION_PATTERN,
    Candidate,
    Release,
    ReleaseFrozen,
    ReleaseItem,
)
from ..pipeline import format as fmt
from ..selectors import judgements_prefetch
from ..services import candidate_to_record
from ..synthetic import synthetic_ids

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User


class ReleaseRefused(Refused):
    pass


class HumanRejectedInRelease(ReleaseRefused):
    """A freeze that would take candidates humans judged invalid, without the curator confirming it."""

    def __init__(self, message: str, rejected: dict[str, str]) -> None:
        super().__init__("acknowledge_human_verdict", message)
        self.rejected = rejected

    def error_extra(self) -> dict[str, dict[str, str]]:
        return {"human_rejected": self.rejected}  # per candidate id, the human majority in words


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


# --- Reads ---------------------------------------------------------------------------------------


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


def _item_states(release: Release) -> dict[str, ItemState]:
    return {
        ext: ItemState(revision, digest)
        for ext, revision, digest in release.items.values_list("external_id", "revision", "content_hash")
    }


def _states(snapshots: Iterable[Snapshot]) -> dict[str, ItemState]:
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
        _item_states(previous) if previous else None, _states(snapshots), previous.label if previous else None
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


@dataclass(frozen=True)
class ItemRecord:
    candidate_id: int
    revision: int
    record: dict[str, Any] = field(hash=False)


def release_item_records(release: Release) -> list[ItemRecord]:
    rows = release.items.order_by("position").values_list("candidate_id", "revision", "line")
    return [ItemRecord(candidate_id, revision, json.loads(line)) for candidate_id, revision, line in rows]


# --- Writes --------------------------------------------------------------------------------------


def _check_name_version(name: str, version: str) -> None:
    if not re.fullmatch(RELEASE_NAME_PATTERN, name):
        raise ReleaseRefused(
            "name", "must be 1-100 characters of a-z 0-9 . _ - starting with a letter or digit, e.g. veriharm-bench"
        )
    if not re.fullmatch(RELEASE_VERSION_PATTERN, version):
        raise ReleaseRefused("version", "must be 1-50 characters of A-Z a-z 0-9 . + _ -, e.g. 1.0")


def release_create(*, user: User, name: str, version: str, description: str = "") -> Release:
    name, version = name.strip(), version.strip()
    _check_name_version(name, version)
    if Release.objects.filter(name=name, version=version).exists():
        raise ReleaseRefused("version", f"release {name} {version} already exists")
    try:
        with transaction.atomic():
            return Release.objects.create(name=name, version=version, description=description.strip(), created_by=user)
    except IntegrityError:
        # Another curator created it between the check and the insert.
        raise ReleaseRefused("version", f"release {name} {version} already exists") from None


def _locked_draft(release_id: int, action: str) -> Release:
    release = Release.objects.select_for_update().get(pk=release_id)
    if release.is_frozen:
        raise ReleaseFrozen(f"Release {release.label} is frozen: it cannot {action}. Make a new version instead.")
    return release


def release_update(release_id: int, *, description: str) -> Release:
    with transaction.atomic():
        release = _locked_draft(release_id, "change")
        release.description = description.strip()
        release.save(update_fields=["description"])
    return release


def release_delete(release_id: int) -> None:
    with transaction.atomic():
        _locked_draft(release_id, "be deleted").delete()


def _freeze(release: Release, snapshots: Sequence[Snapshot], user: User) -> Release:
    """Write the items, then the frozen fields: the models refuse new items once frozen."""
    ReleaseItem.objects.bulk_create(
        [
            ReleaseItem(
                release=release,
                candidate_id=s.candidate_id,
                external_id=s.external_id,
                revision=s.revision,
                position=s.position,
                line=s.line,
                content_hash=s.content_hash,
            )
            for s in snapshots
        ],
        batch_size=1000,
    )
    previous = previous_release(release.name, exclude=release.pk)
    log = changelog(
        _item_states(previous) if previous else None, _states(snapshots), previous.label if previous else None
    )
    release.previous = previous
    release.changelog = log.as_json()
    release.checksum = checksum(lines_in_id_order(snapshots))
    release.frozen_at = timezone.now()
    release.frozen_by = user
    release.save()
    return release


def human_rejected_in(snapshots: Sequence[Snapshot]) -> dict[str, str]:
    """The snapshots' candidates humans judged invalid, by id, with their majority in words."""
    majorities = human_majorities(s.candidate_id for s in snapshots)
    return {
        s.external_id: majorities[s.candidate_id].text
        for s in snapshots
        if s.candidate_id in majorities and majorities[s.candidate_id].rejected
    }


def _acknowledged(snapshots: Sequence[Snapshot], acknowledged: bool, what: str, action: str, outcome: str) -> str:
    """What the release keeps of the human verdicts it was frozen despite; a HumanRejectedInRelease
    when humans judged some of the snapshots' candidates invalid and that was not acknowledged."""
    rejected = human_rejected_in(snapshots)
    if rejected and not acknowledged:
        ids = sorted(rejected)
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        raise HumanRejectedInRelease(
            f"humans judged {len(ids)} of the {what} invalid: {shown}. {action} only if you have "
            f"checked them, and tick the box that says you have checked them; {outcome}",
            rejected,
        )
    return "; ".join(f"{ext}: humans judged it invalid ({rejected[ext]})" for ext in sorted(rejected))


class SyntheticInRelease(ReleaseRefused):
    """A freeze that would take synthetic candidates (`candidates.synthetic`) without the curator confirming it."""

    def __init__(self, message: str, synthetic: list[str]) -> None:
        super().__init__("acknowledge_synthetic", message)
        self.synthetic = synthetic

    def error_extra(self) -> dict[str, list[str]]:
        return {"synthetic": self.synthetic}


def synthetic_in(snapshots: Sequence[Snapshot]) -> list[str]:
    """The ids of the snapshots' synthetic candidates, sorted."""
    synthetic = synthetic_ids(s.candidate_id for s in snapshots)
    return sorted(s.external_id for s in snapshots if s.candidate_id in synthetic)


def _synthetic_acknowledged(snapshots: Sequence[Snapshot], acknowledged: bool) -> str:
    """What the release keeps of the synthetic candidates it was frozen with; a SyntheticInRelease
    when some are and that was not acknowledged."""
    ids = synthetic_in(snapshots)
    if ids and not acknowledged:
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        raise SyntheticInRelease(
            f"{len(ids)} of the approved candidates {'is' if len(ids) == 1 else 'are'} synthetic: {shown}. No "
            "model produced their judge scores and Q. Freeze only to try the workflow, and tick the box that "
            "says you know; nothing was frozen",
            ids,
        )
    return "; ".join(f"{ext}: synthetic, no model produced its judge scores and Q" for ext in ids)


def release_freeze(
    release_id: int, *, user: User, acknowledge_human_verdict: bool = False, acknowledge_synthetic: bool = False
) -> Release:
    """Freeze a draft with the approved set as it is now. Taking candidates humans judged invalid
    needs `acknowledge_human_verdict`, and synthetic ones `acknowledge_synthetic`, whatever their
    approvals acknowledged (votes may have come in since, and another curator may freeze); the
    release then keeps what was acknowledged."""
    with transaction.atomic():
        release = _locked_draft(release_id, "be frozen again")
        snapshots = approved_snapshot(lock=True)
        if not snapshots:
            raise ReleaseRefused("release", "nothing is approved yet: a release needs at least one approved candidate")
        despite = _acknowledged(
            snapshots, acknowledge_human_verdict, "approved candidates", "Freeze", "nothing was frozen"
        )
        synthetic = _synthetic_acknowledged(snapshots, acknowledge_synthetic)
        release.frozen_despite = "; ".join(part for part in (despite, synthetic) if part)
        return _freeze(release, snapshots, user)


def release_adopt(
    *,
    user: User,
    name: str,
    version: str,
    description: str,
    snapshots: Sequence[Snapshot],
    expected_checksum: str,
    acknowledge_human_verdict: bool = False,
    frozen_elsewhere_despite: str = "",
) -> tuple[Release, bool]:
    """Store a release frozen elsewhere (from a bundle); (release, created).

    The same name and version already frozen here with the same checksum is the same release;
    with another checksum, or as a draft, it is a conflict. Taking candidates humans here judged
    invalid needs `acknowledge_human_verdict`, as freezing does, and the release keeps it, beside
    what it was frozen despite where it was made (`frozen_elsewhere_despite`, from its bundle).
    """
    _check_name_version(name, version)
    with transaction.atomic():
        existing = Release.objects.select_for_update().filter(name=name, version=version).first()
        if existing is not None:
            if existing.is_frozen and existing.checksum == expected_checksum:
                return existing, False
            state = f"frozen with checksum {existing.checksum}" if existing.is_frozen else "a draft"
            raise ReleaseRefused("release", f"release {name} {version} already exists here as {state}")
        despite = _acknowledged(
            snapshots, acknowledge_human_verdict, "release's candidates", "Import it", "nothing was imported"
        )
        release = Release.objects.create(name=name, version=version, description=description, created_by=user)
        carried = f"in the bundle: {frozen_elsewhere_despite}" if frozen_elsewhere_despite else ""
        release.frozen_despite = "; ".join(part for part in (despite, carried) if part)
        _freeze(release, snapshots, user)
        if release.checksum != expected_checksum:
            raise ReleaseRefused(
                "release", f"the content's checksum {release.checksum} is not the bundle's {expected_checksum}"
            )
    return release, True
