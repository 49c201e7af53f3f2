"""Importing a release bundle: its candidates, then the release itself, frozen, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from django.db import transaction

from ..importing import ImportRefused, candidate_import
from ..models import Candidate, Release
from ..pipeline import format as fmt
from ..pool.records import candidate_to_record
from ..pool.selectors import judgements_prefetch
from .bundle import RELEASE_JSONL, BundleContent, BundleRefused, bundle_read
from .services import HumanRejectedInRelease, ReleaseRefused, release_adopt
from .snapshots import candidate_snapshot

if TYPE_CHECKING:
    from veriharm_site.accounts.models import User


@dataclass(frozen=True)
class BundleImportSummary:
    release: Release
    release_created: bool
    candidates_created: int
    candidates_already_current: int

    def __str__(self) -> str:
        state = "imported" if self.release_created else "already here, unchanged"
        return (
            f"release {self.release.label} {state}; candidates: {self.candidates_created} created, "
            f"{self.candidates_already_current} already current"
        )


def _current(ids: list[str]) -> dict[str, Candidate]:
    queryset = Candidate.objects.filter(external_id__in=ids).select_related("source_task")
    return {c.external_id: c for c in queryset.prefetch_related(judgements_prefetch())}


def _import_missing(content: BundleContent) -> tuple[int, int]:
    """Import the lines whose candidate is not here with exactly this content; (created, current).

    A candidate a curator edited here is stored with the pipeline's content_hash but another
    text, so the plain import would call an edited line a conflict; comparing the current
    record first lets a bundle made from this database come back as unchanged.
    """
    current = _current([e.id for e in content.entries])
    missing = [
        entry
        for entry in content.entries
        if entry.id not in current or fmt.canonical_json(candidate_to_record(current[entry.id])) != entry.line
    ]
    if missing:
        # Errors name the line of release.jsonl, which is in id order.
        line_numbers = {ext: n for n, ext in enumerate(sorted(e.id for e in content.entries), start=1)}
        records = [
            fmt.Record(
                "candidate",
                entry.record,
                fmt.Location(RELEASE_JSONL, line_numbers[entry.id]),
                fmt.content_hash(entry.record),
            )
            for entry in missing
        ]
        try:
            summary = candidate_import(fmt.ParseResult(records=records))
        except ImportRefused as refused:
            raise BundleRefused([str(e) for e in refused.errors]) from None
        return summary.created, len(content.entries) - len(missing)
    return 0, len(content.entries)


def release_bundle_import(
    stream: IO[bytes], *, user: User, acknowledge_human_verdict: bool = False
) -> BundleImportSummary:
    """Verify the bundle, import its candidates and store its release as frozen here. A release
    holding candidates humans here judged invalid needs `acknowledge_human_verdict`, as a freeze
    does (a HumanRejectedInRelease naming them otherwise)."""
    content = bundle_read(stream)
    meta = content.meta
    existing = Release.objects.filter(name=meta.name, version=meta.version).first()
    if existing is not None and existing.is_frozen and existing.checksum == meta.checksum:
        return BundleImportSummary(existing, False, 0, len(content.entries))
    with transaction.atomic():
        created, already = _import_missing(content)
        stored = _current([e.id for e in content.entries])
        snapshots = []
        for entry in content.entries:
            snapshot = candidate_snapshot(stored[entry.id], entry.position)
            if snapshot.line != entry.line:
                raise BundleRefused(
                    [
                        f"{entry.id}: stored here with other content (revision {stored[entry.id].revision}) "
                        "than the bundle's; the candidate was edited or replaced in this database"
                    ]
                )
            snapshots.append(snapshot)
        try:
            release, release_created = release_adopt(
                user=user,
                name=meta.name,
                version=meta.version,
                description=meta.description,
                snapshots=snapshots,
                expected_checksum=meta.checksum,
                acknowledge_human_verdict=acknowledge_human_verdict,
                frozen_elsewhere_despite=meta.frozen_despite,
            )
        except HumanRejectedInRelease:
            raise  # its own field and the candidates it names, as a freeze's refusal
        except ReleaseRefused as refused:
            raise BundleRefused([refused.message]) from None
    return BundleImportSummary(release, release_created, created, already)
