"""The portable writer: records in memory, ORM writes (SQLite, the embedded database of `make run`;
it runs on PostgreSQL too, which is how the tests hold it to the bulk writer's results)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from ..diffs.diffing import AddedWords
from ..models import Candidate, Judgement, SourceTask
from ..pipeline import format as fmt
from ..pool.bulk import insert_rows, update_column
from ..pool.records import source_task_content
from .outcome import ImportRefused, ImportSummary
from .ranking import ranks_after_import
from .rows import (
    ANALYZE_AFTER,
    CHUNK,
    Progress,
    candidate_fields,
    chunks,
    import_searches,
    judgement_rows,
    refresh_statistics,
    replacement_revision,
)


def import_lines(
    lines: Iterable[tuple[fmt.Location, str | bytes]], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    return import_parsed(fmt.parse(lines), replace=replace, progress=progress)


def import_parsed(parsed: fmt.ParseResult, *, replace: bool = False, progress: Progress | None = None) -> ImportSummary:
    if parsed.errors:
        raise ImportRefused(list(parsed.errors))
    summary = ImportSummary()
    errors: list[fmt.FormatError] = []
    candidates = parsed.candidates
    with transaction.atomic():
        task_ids = _import_source_tasks(candidates, replace, errors, summary)
        if errors:
            raise ImportRefused(errors)
        candidate_ids = _import_candidates(candidates, task_ids, replace, errors, summary, progress)
        import_searches(parsed.searches, candidate_ids, replace, errors, summary, progress)
        if errors:
            raise ImportRefused(errors)
        if summary.created + summary.replaced + summary.searches_created >= ANALYZE_AFTER:
            refresh_statistics()
    return summary


def _import_source_tasks(
    records: list[fmt.Record], replace: bool, errors: list[fmt.FormatError], summary: ImportSummary
) -> dict[str, int]:
    wanted: dict[str, tuple[dict[str, Any], fmt.Location]] = {}
    for record in records:
        task = record.data["source_task"]
        wanted.setdefault(task["id"], (task, record.location))
    ids: dict[str, int] = {}
    to_update: list[SourceTask] = []
    for chunk in chunks(list(wanted)):
        for stored in SourceTask.objects.filter(external_id__in=chunk):
            ids[stored.external_id] = stored.pk
            given, location = wanted[stored.external_id]
            if source_task_content(stored) != given:
                if not replace:
                    errors.append(
                        fmt.FormatError(
                            location,
                            "source_task",
                            f"conflicts with the stored source task {stored.external_id!r} "
                            "(import with replace to overwrite it)",
                        )
                    )
                    continue
                stored.instruction = given["instruction"]
                stored.task_test = given["task_test"]
                stored.environment = given["environment"]
                to_update.append(stored)
    if to_update:
        SourceTask.objects.bulk_update(to_update, ["instruction", "task_test", "environment"], batch_size=CHUNK)
    new = [
        {
            "external_id": task["id"],
            "instruction": task["instruction"],
            "task_test": task["task_test"],
            "environment": task["environment"],
        }
        for key, (task, _) in wanted.items()
        if key not in ids
    ]
    for row, pk in zip(new, insert_rows(SourceTask, new)):
        ids[row["external_id"]] = pk
    summary.source_tasks_created = len(new)
    return ids


def _import_candidates(
    records: list[fmt.Record],
    task_ids: dict[str, int],
    replace: bool,
    errors: list[fmt.FormatError],
    summary: ImportSummary,
    progress: Progress | None,
) -> dict[str, int]:
    """Classify every record against what is stored, then write: new rows in one pass, already
    ranked; replaced rows in place (keeping their primary keys); shifted ranks last."""
    ids: dict[str, int] = {}
    new: list[fmt.Record] = []
    replaced: list[tuple[int, fmt.Record]] = []
    for chunk in chunks(records):
        stored = {
            ext: (pk, digest)
            for ext, pk, digest in Candidate.objects.filter(external_id__in=[r.data["id"] for r in chunk]).values_list(
                "external_id", "pk", "content_hash"
            )
        }
        for record in chunk:
            existing = stored.get(record.data["id"])
            if existing is None:
                new.append(record)
                continue
            pk, digest = existing
            ids[record.data["id"]] = pk
            if digest == record.content_hash:
                summary.unchanged += 1
            elif replace:
                replaced.append((pk, record))
            else:
                errors.append(
                    fmt.FormatError(
                        record.location,
                        "id",
                        f"candidate {record.data['id']!r} is already stored with other content "
                        "(import with replace to overwrite it)",
                    )
                )
    if errors or not (new or replaced):
        if progress:
            progress(len(records))
        summary.candidate_pks = list(ids.values())
        return ids
    new_ranks, shifted = ranks_after_import(
        {r.data["id"]: fmt.quality(r.data["judgements"]) for r in new},
        {pk: fmt.quality(r.data["judgements"]) for pk, r in replaced},
    )
    added = AddedWords()
    for chunk in chunks(new):
        rows = []
        for record in chunk:
            fields = candidate_fields(
                record.data, task_ids[record.data["source_task"]["id"]], record.content_hash, added
            )
            fields["rank"] = new_ranks[record.data["id"]]
            rows.append(fields)
        judgements = []
        for record, pk in zip(chunk, insert_rows(Candidate, rows)):
            ids[record.data["id"]] = pk
            judgements.extend(judgement_rows(pk, record.data))
        insert_rows(Judgement, judgements)
        if progress:
            progress(len(chunk))
    summary.created = len(new)
    judgements = []
    for pk, record in replaced:
        fields = candidate_fields(record.data, task_ids[record.data["source_task"]["id"]], record.content_hash)
        fields["revision"] = replacement_revision(pk, fields, record.location)
        Candidate.objects.filter(pk=pk).update(**fields)
        Judgement.objects.filter(candidate_id=pk).delete()
        judgements.extend(judgement_rows(pk, record.data))
    insert_rows(Judgement, judgements)
    summary.replaced = len(replaced)
    update_column(Candidate, "rank", shifted)
    if progress:
        progress(len(records) - len(new))
    summary.candidate_pks = list(ids.values())
    return ids
