"""What both writers of the import share: a pipeline record as the row values of a candidate and
its judgements, a replacing import's revision, the searches (written through the ORM by both) and
fresh planner statistics after a large import."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.db import connection

from ..curation.revisions import revision_append
from ..curation.search_report import first_success
from ..diffs.diffing import AddedWords, search_text
from ..models import Candidate, Judgement, Search, SearchAttempt, SourceTask
from ..pipeline import format as fmt
from ..pool.bulk import insert_rows
from .outcome import ImportSummary

CHUNK = 2000
# An import writing this many rows refreshes the planner's statistics before it commits.
ANALYZE_AFTER = 5000
Progress = Callable[[int], None]


def chunks(items: list, size: int = CHUNK) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def candidate_fields(
    data: dict[str, Any], source_task_id: int, digest: str, added: AddedWords | None = None
) -> dict[str, Any]:
    added = added or AddedWords()
    return {
        "external_id": data["id"],
        "source_task_id": source_task_id,
        "instruction": data["instruction"],
        "search_text": search_text(data["id"], added(data["source_task"]["instruction"], data["instruction"])),
        "harm_test": data["harm_test"],
        "perturbation": data["perturbation"],
        "target_agent": data["provenance"]["target_agent"],
        "proposer": data["provenance"]["proposer"],
        "iteration": data["provenance"]["iteration"],
        "harm_summary": data["harm_summary"],
        "risk_category": data["risk_category"],
        "references": data["references"],
        "twin": data["twin"],
        "extra": data["extra"],
        "content_hash": digest,
        "quality": fmt.quality(data["judgements"]),
    }


def judgement_rows(candidate_pk: int, data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"candidate_id": candidate_pk, "judge": j["judge"], "position": i, "rationale": j["rationale"], **j["scores"]}
        for i, j in enumerate(data["judgements"])
    ]


def replacement_revision(pk: int, fields: dict[str, Any], location: fmt.Location) -> int:
    """A replacing import is a change like a curator's edit: earlier text stays in the revision
    history and the revision number moves on, so results of the old text read as stale."""
    candidate = Candidate.objects.select_for_update().get(pk=pk)
    if candidate.instruction == fields["instruction"] and candidate.harm_test == fields["harm_test"]:
        return candidate.revision
    revision = revision_append(
        candidate,
        instruction=fields["instruction"],
        harm_test=fields["harm_test"],
        reason=f"Replaced by an import of {location.file}, line {location.line}",
    )
    return revision.number


def import_searches(
    records: list[fmt.Record],
    candidate_ids: dict[str, int],
    replace: bool,
    errors: list[fmt.FormatError],
    summary: ImportSummary,
    progress: Progress | None,
) -> None:
    referenced = {r.data["candidate_id"] for r in records if r.data["candidate_id"]} - set(candidate_ids)
    for chunk in chunks(sorted(referenced)):
        candidate_ids.update(Candidate.objects.filter(external_id__in=chunk).values_list("external_id", "pk"))
    for chunk in chunks(records):
        keys = {(r.data["source_task_id"], r.data["target_agent"], r.data["proposer"]): r for r in chunk}
        stored = {
            (s.source_task_external_id, s.target_agent, s.proposer): s
            for s in Search.objects.filter(source_task_external_id__in={k[0] for k in keys})
            if (s.source_task_external_id, s.target_agent, s.proposer) in keys
        }
        new: list[dict[str, Any]] = []
        new_records: list[fmt.Record] = []
        for key, record in keys.items():
            data = record.data
            candidate_pk = None
            if data["candidate_id"] is not None:
                candidate_pk = candidate_ids.get(data["candidate_id"])
                if candidate_pk is None:
                    errors.append(
                        fmt.FormatError(
                            record.location,
                            "candidate_id",
                            f"names candidate {data['candidate_id']!r}, which is neither in this import nor stored",
                        )
                    )
                    continue
            existing = stored.get(key)
            if existing is not None:
                if existing.content_hash == record.content_hash:
                    summary.searches_unchanged += 1
                    continue
                if not replace:
                    errors.append(
                        fmt.FormatError(
                            record.location,
                            "source_task_id",
                            "this search is already stored with other content (import with replace to overwrite it)",
                        )
                    )
                    continue
                existing.delete()
                summary.searches_replaced += 1
            else:
                summary.searches_created += 1
            new.append(
                {
                    "source_task_external_id": data["source_task_id"],
                    "target_agent": data["target_agent"],
                    "proposer": data["proposer"],
                    "budget": data["budget"],
                    "candidate_id": candidate_pk,
                    "succeeded": candidate_pk is not None,
                    "first_success": first_success(
                        ((a["task_passed"], a["harm_detected"]) for a in data["attempts"]), data["budget"]
                    ),
                    "content_hash": record.content_hash,
                }
            )
            new_records.append(record)
        if errors:
            continue
        search_ids = insert_rows(Search, new)
        insert_rows(
            SearchAttempt,
            [
                {"search_id": pk, **attempt}
                for pk, record in zip(search_ids, new_records)
                for attempt in record.data["attempts"]
            ],
        )
        if progress:
            progress(len(chunk))


def refresh_statistics() -> None:
    """Fresh planner statistics after a large import, so the ranking's first reads use their
    indexes instead of waiting for autovacuum to notice the new rows."""
    if connection.vendor != "postgresql":
        return
    tables = [m._meta.db_table for m in (SourceTask, Candidate, Judgement, Search, SearchAttempt)]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE " + ", ".join(tables))
