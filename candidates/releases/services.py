"""Releases: the approved set frozen as a named, versioned benchmark.

A draft release is a name, a version and a description. Freezing it snapshots every
approved candidate's pipeline record at its current revision into release items, writes
the changelog against the previous frozen release of the same name and the checksum, and
from then on the models refuse any change (see `ReleaseFrozen`).

The checksum is the sha256 of the release's JSONL export: one canonical JSON line
(sorted keys, no spaces) per item, in id order, each ending in a newline. So
`sha256sum veriharm-bench-1.0.jsonl` on a downloaded export gives the checksum shown in the
application, and the checksum is recomputable from the stored lines at any time.

This module holds the writes (create, describe, delete, freeze, adopt from a bundle); the reads are in
`selectors.py`, the snapshots, changelog and checksum they share in `snapshots.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.utils import timezone

from veriharm_site.refusals import Refused

from ..models import (
    RELEASE_NAME_PATTERN,
    RELEASE_VERSION_PATTERN,
    Release,
    ReleaseFrozen,
    ReleaseItem,
)
from .selectors import human_rejected_in, item_states, previous_release, snapshot_states, synthetic_in
from .snapshots import Snapshot, approved_snapshot, changelog, checksum, lines_in_id_order

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
        item_states(previous) if previous else None, snapshot_states(snapshots), previous.label if previous else None
    )
    release.previous = previous
    release.changelog = log.as_json()
    release.checksum = checksum(lines_in_id_order(snapshots))
    release.frozen_at = timezone.now()
    release.frozen_by = user
    release.save()
    return release


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
    """A freeze that would take synthetic candidates (`candidates.pool.synthetic`) without the curator confirming it."""

    def __init__(self, message: str, synthetic: list[str]) -> None:
        super().__init__("acknowledge_synthetic", message)
        self.synthetic = synthetic

    def error_extra(self) -> dict[str, list[str]]:
        return {"synthetic": self.synthetic}


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
