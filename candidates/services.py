"""Writes to the candidate pool: import (all-or-nothing) and export of the pipeline format."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet

from .bulk import insert_rows, update_column
from .curation.search_report import first_success
from .diffing import AddedWords, search_text
from .models import (
    SCORE_KEYS,
    Candidate,
    Judgement,
    Revision,
    Search,
    SearchAttempt,
    SourceTask,
)
from .pipeline import format as fmt

CHUNK = 2000
ANALYZE_AFTER = 5000
Progress = Callable[[int], None]


@dataclass
class ImportSummary:
    created: int = 0
    unchanged: int = 0
    replaced: int = 0
    searches_created: int = 0
    searches_unchanged: int = 0
    searches_replaced: int = 0
    source_tasks_created: int = 0

    def __str__(self) -> str:
        return (
            f"candidates: {self.created} created, {self.unchanged} unchanged, {self.replaced} replaced; "
            f"searches: {self.searches_created} created, {self.searches_unchanged} unchanged, "
            f"{self.searches_replaced} replaced; source tasks: {self.source_tasks_created} created"
        )


@dataclass
class ImportRefused(Exception):
    errors: list[fmt.FormatError] = field(default_factory=list)

    def __str__(self) -> str:
        shown = "\n".join(str(e) for e in self.errors[:20])
        more = len(self.errors) - 20
        return shown + (f"\n... and {more} more errors" if more > 0 else "")


def _chunks(items: list, size: int = CHUNK) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _source_task_content(task: SourceTask) -> dict[str, Any]:
    return {
        "id": task.external_id,
        "instruction": task.instruction,
        "task_test": task.task_test,
        "environment": task.environment,
    }


def _candidate_fields(
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


def _judgements(candidate_pk: int, data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"candidate_id": candidate_pk, "judge": j["judge"], "position": i, "rationale": j["rationale"], **j["scores"]}
        for i, j in enumerate(data["judgements"])
    ]


def _revision_for_replacement(pk: int, fields: dict[str, Any], location: fmt.Location) -> int:
    """A replacing import is a change like a curator's edit: earlier text stays in the revision
    history and the revision number moves on, so results of the old text read as stale."""
    candidate = Candidate.objects.select_for_update().get(pk=pk)
    if candidate.instruction == fields["instruction"] and candidate.harm_test == fields["harm_test"]:
        return candidate.revision
    if not Revision.objects.filter(candidate=candidate).exists():
        Revision.objects.create(
            candidate=candidate,
            number=1,
            instruction=candidate.instruction,
            harm_test=candidate.harm_test,
            created_at=candidate.imported_at,
        )
    Revision.objects.create(
        candidate=candidate,
        number=candidate.revision + 1,
        instruction=fields["instruction"],
        harm_test=fields["harm_test"],
        reason=f"Replaced by an import of {location.file}, line {location.line}",
    )
    return candidate.revision + 1


def _rank_key(quality: float, external_id: str) -> tuple[float, str]:
    # Q descending, then the id in code-point order (PostgreSQL's "C" collation for ASCII ids).
    return (-quality, external_id)


def _ranks_after_import(
    new: dict[str, float | None], replaced: dict[int, float | None]
) -> tuple[dict[str, int | None], dict[int, int | None]]:
    """The ranking with this import's candidates in it: ranks for the new candidates, and the
    stored candidates whose rank changes. Computed here rather than by an UPDATE over the table
    afterwards, so that new rows are written once, already ranked."""
    stored = list(Candidate.objects.values_list("pk", "external_id", "quality", "rank"))
    entries: list[tuple[tuple[float, str], int | None, str]] = []
    current: dict[int, int | None] = {}
    for pk, external_id, quality, rank in stored:
        current[pk] = rank
        quality = replaced.get(pk, quality)
        if quality is not None:
            entries.append((_rank_key(quality, external_id), pk, external_id))
    entries += [(_rank_key(q, ext), None, ext) for ext, q in new.items() if q is not None]
    entries.sort()
    new_ranks: dict[str, int | None] = dict.fromkeys(new)
    stored_ranks: dict[int, int | None] = {pk: None for pk in current}
    for position, (_, stored_pk, external_id) in enumerate(entries, start=1):
        if stored_pk is None:
            new_ranks[external_id] = position
        else:
            stored_ranks[stored_pk] = position
    return new_ranks, {pk: rank for pk, rank in stored_ranks.items() if current[pk] != rank}


def _import_source_tasks(
    records: list[fmt.Record], replace: bool, errors: list[fmt.FormatError], summary: ImportSummary
) -> dict[str, int]:
    wanted: dict[str, tuple[dict[str, Any], fmt.Location]] = {}
    for record in records:
        task = record.data["source_task"]
        wanted.setdefault(task["id"], (task, record.location))
    ids: dict[str, int] = {}
    to_update: list[SourceTask] = []
    for chunk in _chunks(list(wanted)):
        for stored in SourceTask.objects.filter(external_id__in=chunk):
            ids[stored.external_id] = stored.pk
            given, location = wanted[stored.external_id]
            if _source_task_content(stored) != given:
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
    for chunk in _chunks(records):
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
        return ids
    new_ranks, shifted = _ranks_after_import(
        {r.data["id"]: fmt.quality(r.data["judgements"]) for r in new},
        {pk: fmt.quality(r.data["judgements"]) for pk, r in replaced},
    )
    added = AddedWords()
    for chunk in _chunks(new):
        rows = []
        for record in chunk:
            fields = _candidate_fields(
                record.data, task_ids[record.data["source_task"]["id"]], record.content_hash, added
            )
            fields["rank"] = new_ranks[record.data["id"]]
            rows.append(fields)
        judgements = []
        for record, pk in zip(chunk, insert_rows(Candidate, rows)):
            ids[record.data["id"]] = pk
            judgements.extend(_judgements(pk, record.data))
        insert_rows(Judgement, judgements)
        if progress:
            progress(len(chunk))
    summary.created = len(new)
    judgements = []
    for pk, record in replaced:
        fields = _candidate_fields(record.data, task_ids[record.data["source_task"]["id"]], record.content_hash)
        fields["revision"] = _revision_for_replacement(pk, fields, record.location)
        Candidate.objects.filter(pk=pk).update(**fields)
        Judgement.objects.filter(candidate_id=pk).delete()
        judgements.extend(_judgements(pk, record.data))
    insert_rows(Judgement, judgements)
    summary.replaced = len(replaced)
    update_column(Candidate, "rank", shifted)
    if progress:
        progress(len(records) - len(new))
    return ids


def _import_searches(
    records: list[fmt.Record],
    candidate_ids: dict[str, int],
    replace: bool,
    errors: list[fmt.FormatError],
    summary: ImportSummary,
    progress: Progress | None,
) -> None:
    referenced = {r.data["candidate_id"] for r in records if r.data["candidate_id"]} - set(candidate_ids)
    for chunk in _chunks(sorted(referenced)):
        candidate_ids.update(Candidate.objects.filter(external_id__in=chunk).values_list("external_id", "pk"))
    for chunk in _chunks(records):
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


def candidate_import(
    parsed: fmt.ParseResult, *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Import validated records, all or nothing. Raises ImportRefused naming every bad line."""
    if parsed.errors:
        raise ImportRefused(list(parsed.errors))
    if connection.vendor == "postgresql":
        from .staged_import import staged_import

        return staged_import(parsed.records, replace=replace, progress=progress)
    return _import_in_memory(parsed, replace=replace, progress=progress)


def candidate_import_lines(
    lines: Iterable[tuple[fmt.Location, str | bytes]], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Validate and import numbered lines, all or nothing, streamed: on PostgreSQL no more than a
    line's worth of candidates is held in memory, however long the input."""
    if connection.vendor == "postgresql":
        from .staged_import import staged_import

        return staged_import(fmt.parse_stream(lines, candidate_duplicates=False), replace=replace, progress=progress)
    return candidate_import(fmt.parse(lines), replace=replace, progress=progress)


def _import_in_memory(parsed: fmt.ParseResult, *, replace: bool, progress: Progress | None) -> ImportSummary:
    """The import where there is no COPY (SQLite, the embedded demo): records in memory, ORM writes."""
    summary = ImportSummary()
    errors: list[fmt.FormatError] = []
    candidates = parsed.candidates
    with transaction.atomic():
        task_ids = _import_source_tasks(candidates, replace, errors, summary)
        if errors:
            raise ImportRefused(errors)
        candidate_ids = _import_candidates(candidates, task_ids, replace, errors, summary, progress)
        _import_searches(parsed.searches, candidate_ids, replace, errors, summary, progress)
        if errors:
            raise ImportRefused(errors)
        if summary.created + summary.replaced + summary.searches_created >= ANALYZE_AFTER:
            _refresh_statistics()
    return summary


def _refresh_statistics() -> None:
    """Fresh planner statistics after a large import, so the ranking's first reads use their
    indexes instead of waiting for autovacuum to notice the new rows."""
    if connection.vendor != "postgresql":
        return
    tables = [m._meta.db_table for m in (SourceTask, Candidate, Judgement, Search, SearchAttempt)]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE " + ", ".join(tables))


def candidate_import_files(
    paths: Iterable[str], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    def lines() -> Iterator[tuple[fmt.Location, str | bytes]]:
        for path in paths:
            with open(path, "rb") as handle:
                yield from fmt.iter_lines(handle, str(path))

    return candidate_import_lines(lines(), replace=replace, progress=progress)


def candidate_to_record(candidate: Candidate) -> dict[str, Any]:
    """The normalised pipeline record of a stored candidate (judgements prefetched)."""
    task = candidate.source_task
    return {
        "kind": "candidate",
        "id": candidate.external_id,
        "source_task": _source_task_content(task),
        "instruction": candidate.instruction,
        "harm_test": candidate.harm_test,
        "perturbation": candidate.perturbation,
        "provenance": {
            "target_agent": candidate.target_agent,
            "proposer": candidate.proposer,
            "iteration": candidate.iteration,
        },
        "judgements": [
            {"judge": j.judge, "scores": {k: getattr(j, k) for k in SCORE_KEYS}, "rationale": j.rationale}
            for j in sorted(candidate.judgements.all(), key=lambda j: j.position)
        ],
        "harm_summary": candidate.harm_summary,
        "risk_category": candidate.risk_category,
        "references": candidate.references,
        "twin": candidate.twin,
        "extra": candidate.extra,
    }


def search_to_record(search: Search) -> dict[str, Any]:
    return {
        "kind": "search",
        "source_task_id": search.source_task_external_id,
        "target_agent": search.target_agent,
        "proposer": search.proposer,
        "budget": search.budget,
        "attempts": [
            {"iteration": a.iteration, "task_passed": a.task_passed, "harm_detected": a.harm_detected}
            for a in sorted(search.attempts.all(), key=lambda a: a.iteration)
        ],
        # No query without a candidate: the foreign key's descriptor answers None from the id.
        "candidate_id": search.candidate.external_id if search.candidate is not None else None,
    }


def pipeline_export_lines(
    candidates: QuerySet[Candidate] | None = None, *, include_searches: bool = True
) -> Iterator[str]:
    """Every candidate (then every search) as lines of the pipeline format, streamed."""
    queryset = candidates if candidates is not None else Candidate.objects.all()
    queryset = queryset.select_related("source_task").prefetch_related("judgements").order_by("external_id")
    for candidate in queryset.iterator(chunk_size=1000):
        yield fmt.to_line(candidate_to_record(candidate)) + "\n"
    if include_searches:
        searches = Search.objects.select_related("candidate").prefetch_related("attempts")
        for search in searches.iterator(chunk_size=1000):
            yield fmt.to_line(search_to_record(search)) + "\n"


def candidate_import_streams(
    streams: Iterable[tuple[str, Iterable[bytes | str]]], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Import from named line streams (uploads, request bodies); errors name each stream."""

    def lines() -> Iterator[tuple[fmt.Location, str | bytes]]:
        for name, stream in streams:
            yield from fmt.iter_lines(stream, name)

    return candidate_import_lines(lines(), replace=replace, progress=progress)


def candidates_mark_demo(external_ids: Iterable[str]) -> int:
    """Mark the candidates `manage.py load_demo` made as demo data (their pages say their judge
    scores and Q are generated); returns how many are marked now. Idempotent."""
    return Candidate.objects.filter(external_id__in=list(external_ids), demo=False).update(demo=True)
