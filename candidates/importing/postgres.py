"""The bulk writer, on PostgreSQL: streamed into a staging table, then set-based SQL.

Validated lines go, as they are read, through one COPY into a temporary staging table, so
PostgreSQL ingests while Python validates (two cores busy, not one after the other) and memory
stays bounded by what a line holds, whatever the file's length. Then, in the same transaction:

- one scan copies the staging table's keys (id, hash, Q) into a narrow table; the rules that span
  lines and the stored pool are checked there: an id twice in the file with other content, a
  candidate stored with other content (unless replacing);
- the ranking (`ranking.RANK_ORDER`, as SQL) is one window function over the stored candidates and the new ones; new rows get their primary key from the sequence and
  their rank before they are written, so each is written once, already ranked;
- one INSERT ... SELECT writes the candidates, one more their judgements (kept in the staging
  row as a JSON array), and one UPDATE moves the stored candidates whose rank changed.

Source tasks (few; parse_stream keeps them to check that each id means one task) and searches
(read after the candidates they name) stay in Python. Replaced candidates (rare) go through the
same per-row `revision_append` as a curator's edit.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from django.db import connection, transaction
from psycopg.copy import QueuedLibpqWriter

from ..diffs.diffing import AddedWords, search_text
from ..models import SCORE_KEYS, Candidate, Judgement, SourceTask
from ..pipeline import format as fmt
from ..pool.bulk import insert_rows
from .outcome import ImportRefused, ImportSummary
from .ranking import rank_sql
from .rows import ANALYZE_AFTER, Progress, import_searches, judgement_rows, refresh_statistics, replacement_revision

logger = logging.getLogger(__name__)
PROGRESS_EVERY = 2000
STAGE = "_import_stage"
KEYS = "_import_key"
RANKS = "_import_rank"
NEW = "_import_new"
TASKS = "_import_task"

_STAGE_COLUMNS = (
    "ord bigint, file_no int, line int, external_id text, task_external_id text, instruction text, "
    "search_text text, harm_test text, perturbation text, target_agent text, proposer text, iteration smallint, "
    "harm_summary text, risk_category text, refs jsonb, twin jsonb, extra jsonb, content_hash text, "
    "quality float8, judgements jsonb"
)
_CANDIDATE_COLUMNS = (
    "external_id",
    "instruction",
    "search_text",
    "harm_test",
    "perturbation",
    "target_agent",
    "proposer",
    "iteration",
    "harm_summary",
    "risk_category",
    "references",
    "twin",
    "extra",
    "content_hash",
)


def _json(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits in `extra`
        return json.dumps(value, ensure_ascii=False)


def _loads(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, str | bytes) else value


class _Stream:
    """What the streaming pass keeps: errors, source tasks, searches and file names; no candidate rows."""

    def __init__(self) -> None:
        self.errors: list[tuple[int, fmt.FormatError]] = []
        self.error_count = 0
        self.tasks: dict[str, tuple[dict[str, Any], fmt.Location]] = {}
        self.searches: list[fmt.Record] = []
        self.files: list[str] = []
        self._file_numbers: dict[str, int] = {}
        self.staged = 0

    def error(self, ordinal: int, error: fmt.FormatError) -> None:
        self.error_count += 1
        if len(self.errors) < fmt.MAX_ERRORS:
            self.errors.append((ordinal, error))

    def file_number(self, name: str) -> int:
        number = self._file_numbers.get(name)
        if number is None:
            number = self._file_numbers[name] = len(self.files)
            self.files.append(name)
        return number

    def location(self, file_no: int, line: int) -> fmt.Location:
        return fmt.Location(self.files[file_no], line)


def _stage(
    cursor: Any, items: Iterable[fmt.Record | fmt.FormatError], stream: _Stream, progress: Progress | None
) -> None:
    added = AddedWords()
    pending = 0
    # A writer thread sends the rows, so validating the next lines goes on while PostgreSQL reads
    # (its queue is bounded: memory stays bounded too).
    with cursor.copy(f"COPY {STAGE} FROM STDIN", writer=QueuedLibpqWriter(cursor)) as copy:
        for ordinal, item in enumerate(items):
            if isinstance(item, fmt.FormatError):
                stream.error(ordinal, item)
                continue
            if item.kind == "search":
                stream.searches.append(item)
                continue
            data = item.data
            task = data["source_task"]
            stream.tasks.setdefault(task["id"], (task, item.location))
            judgements = data["judgements"]
            provenance = data["provenance"]
            copy.write_row(
                (
                    ordinal,
                    stream.file_number(item.location.file),
                    item.location.line,
                    data["id"],
                    task["id"],
                    data["instruction"],
                    search_text(data["id"], added(task["instruction"], data["instruction"])),
                    data["harm_test"],
                    data["perturbation"],
                    provenance["target_agent"],
                    provenance["proposer"],
                    provenance["iteration"],
                    data["harm_summary"],
                    data["risk_category"],
                    _json(data["references"]),
                    _json(data["twin"]),
                    _json(data["extra"]),
                    item.content_hash,
                    fmt.quality(judgements),
                    _json(judgements),
                )
            )
            stream.staged += 1
            pending += 1
            if progress and pending >= PROGRESS_EVERY:
                progress(pending)
                pending = 0
    if progress and pending:
        progress(pending)


def _create_tables(cursor: Any) -> None:
    cursor.execute(f"DROP TABLE IF EXISTS {STAGE}, {KEYS}, {RANKS}, {NEW}, {TASKS}")
    cursor.execute(f"CREATE TEMP TABLE {STAGE} ({_STAGE_COLUMNS})")
    cursor.execute(
        f"CREATE TEMP TABLE {TASKS} (external_id text PRIMARY KEY, instruction text, task_test text, "
        "environment jsonb, file_no int, line int)"
    )


def _drop_tables(cursor: Any) -> None:
    cursor.execute(f"DROP TABLE IF EXISTS {STAGE}, {KEYS}, {RANKS}, {NEW}, {TASKS}")


def _source_tasks(cursor: Any, stream: _Stream, replace: bool) -> tuple[int, list[fmt.FormatError]]:
    """Insert the new source tasks; a stored one with other content is an error unless replacing."""
    with cursor.copy(f"COPY {TASKS} FROM STDIN") as copy:
        for task_id, (task, location) in stream.tasks.items():
            copy.write_row(
                (
                    task_id,
                    task["instruction"],
                    task["task_test"],
                    _json(task["environment"]),
                    stream.file_number(location.file),
                    location.line,
                )
            )
    table = SourceTask._meta.db_table
    cursor.execute(
        f"SELECT t.external_id, t.file_no, t.line FROM {TASKS} t JOIN {table} s ON s.external_id = t.external_id "
        "WHERE (s.instruction, s.task_test, s.environment) IS DISTINCT FROM (t.instruction, t.task_test, t.environment) "
        "ORDER BY t.file_no, t.line"
    )
    differing = cursor.fetchall()
    if differing and not replace:
        return 0, [
            fmt.FormatError(
                stream.location(file_no, line),
                "source_task",
                f"conflicts with the stored source task {task_id!r} (import with replace to overwrite it)",
            )
            for task_id, file_no, line in differing[: fmt.MAX_ERRORS]
        ]
    if differing:
        cursor.execute(
            f"UPDATE {table} s SET instruction = t.instruction, task_test = t.task_test, environment = t.environment "
            f"FROM {TASKS} t WHERE s.external_id = t.external_id AND (s.instruction, s.task_test, s.environment) "
            "IS DISTINCT FROM (t.instruction, t.task_test, t.environment)"
        )
    cursor.execute(
        f"INSERT INTO {table} (external_id, instruction, task_test, environment) "
        f"SELECT t.external_id, t.instruction, t.task_test, t.environment FROM {TASKS} t "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table} s WHERE s.external_id = t.external_id)"
    )
    return cursor.rowcount, []


def _duplicates(cursor: Any, stream: _Stream) -> list[tuple[int, fmt.FormatError]]:
    """A candidate id given twice in the import: identical lines count once, others are errors."""
    cursor.execute(
        f"SELECT k.ord, k.file_no, k.line, k.external_id, k.first_file, k.first_line, k.content_hash = k.first_hash "
        f"FROM (SELECT ord, file_no, line, external_id, content_hash, "
        f"  first_value(file_no) OVER w AS first_file, first_value(line) OVER w AS first_line, "
        f"  first_value(content_hash) OVER w AS first_hash, first_value(ord) OVER w AS first_ord "
        f"  FROM {KEYS} WHERE external_id IN (SELECT external_id FROM {KEYS} GROUP BY external_id HAVING count(*) > 1) "
        f"  WINDOW w AS (PARTITION BY external_id ORDER BY ord)) k "
        "WHERE k.ord <> k.first_ord ORDER BY k.ord"
    )
    errors = []
    repeated = []
    for ordinal, file_no, line, external_id, first_file, first_line, same in cursor.fetchall():
        repeated.append(ordinal)
        if not same:
            errors.append(
                (
                    ordinal,
                    fmt.FormatError(
                        stream.location(file_no, line),
                        "id",
                        f"candidate {external_id!r} appears with other content at {stream.location(first_file, first_line)}",
                    ),
                )
            )
    if repeated:
        cursor.execute(f"DELETE FROM {KEYS} WHERE ord = ANY(%s)", [repeated])
    return errors


def _stored_matches(
    cursor: Any, stream: _Stream, replace: bool
) -> tuple[list[tuple[int, int]], int, list[fmt.FormatError]]:
    """Candidates already stored: (ord, pk) to replace, how many are unchanged, and the conflicts."""
    table = Candidate._meta.db_table
    cursor.execute(
        f"SELECT k.ord, k.file_no, k.line, k.external_id, c.id, c.content_hash = k.content_hash "
        f"FROM {KEYS} k JOIN {table} c ON c.external_id = k.external_id ORDER BY k.ord"
    )
    to_replace: list[Any] = []
    unchanged = 0
    errors: list[Any] = []
    for ordinal, file_no, line, external_id, pk, same in cursor.fetchall():
        if same:
            unchanged += 1
        elif replace:
            to_replace.append((ordinal, pk))
        elif len(errors) < fmt.MAX_ERRORS:
            errors.append(
                fmt.FormatError(
                    stream.location(file_no, line),
                    "id",
                    f"candidate {external_id!r} is already stored with other content (import with replace to overwrite it)",
                )
            )
    return to_replace, unchanged, errors


def _rank(cursor: Any, to_replace: list[tuple[int, int]]) -> int:
    """Ranks for the new candidates (with their future keys) and for the stored ones; returns how many are new."""
    table = Candidate._meta.db_table
    replaced_ords = [ordinal for ordinal, _ in to_replace]
    replaced_pks = [pk for _, pk in to_replace]
    # Stored rows keep their Q unless this import replaces them; matched rows are not new.
    cursor.execute(
        f"CREATE TEMP TABLE {RANKS} AS "
        f"SELECT stored_id, ord, {rank_sql()} AS rank FROM ("
        f"  SELECT c.id AS stored_id, NULL::bigint AS ord, coalesce(r.quality, c.quality) AS quality, "
        f"         c.external_id FROM {table} c "
        f"  LEFT JOIN (SELECT p.pk, k.quality FROM unnest(%s::bigint[], %s::bigint[]) AS p(pk, ord) "
        f"             JOIN {KEYS} k ON k.ord = p.ord) r ON r.pk = c.id "
        "  UNION ALL "
        f"  SELECT NULL, k.ord, k.quality, k.external_id FROM {KEYS} k "
        f"  WHERE NOT EXISTS (SELECT 1 FROM {table} c WHERE c.external_id = k.external_id)"
        ") pool",
        [replaced_pks, replaced_ords],
    )
    sequence = f"pg_get_serial_sequence('{table}', 'id')"
    cursor.execute(
        f"CREATE TEMP TABLE {NEW} AS SELECT ord, nextval({sequence}) AS id, rank FROM {RANKS} WHERE ord IS NOT NULL"
    )
    return cursor.rowcount


def _insert_new(cursor: Any) -> None:
    candidates, judgements, tasks = Candidate._meta.db_table, Judgement._meta.db_table, SourceTask._meta.db_table
    columns = ", ".join(connection.ops.quote_name(c) for c in _CANDIDATE_COLUMNS)
    sources = ", ".join("s.refs" if c == "references" else f"s.{c}" for c in _CANDIDATE_COLUMNS)
    cursor.execute(
        f"INSERT INTO {candidates} (id, source_task_id, {columns}, quality, rank, revision, imported_at, updated_at) "
        f"SELECT n.id, t.id, {sources}, s.quality, n.rank, 1, now(), now() "
        f"FROM {STAGE} s JOIN {NEW} n ON n.ord = s.ord JOIN {tasks} t ON t.external_id = s.task_external_id"
    )
    scores = ", ".join(SCORE_KEYS)
    score_values = ", ".join(f"(j.value -> 'scores' ->> '{key}')::smallint" for key in SCORE_KEYS)
    cursor.execute(
        f"INSERT INTO {judgements} (candidate_id, judge, position, {scores}, rationale) "
        f"SELECT n.id, j.value ->> 'judge', j.position - 1, {score_values}, j.value ->> 'rationale' "
        f"FROM {STAGE} s JOIN {NEW} n ON n.ord = s.ord "
        "CROSS JOIN LATERAL jsonb_array_elements(s.judgements) WITH ORDINALITY AS j(value, position)"
    )


def _replace(cursor: Any, to_replace: list[tuple[int, int]], stream: _Stream) -> None:
    """Stored candidates this import replaces, one by one through the revision history."""
    if not to_replace:
        return
    pks = dict(to_replace)
    tasks = SourceTask._meta.db_table
    cursor.execute(
        f"SELECT s.ord, s.file_no, s.line, t.id, {', '.join('s.refs' if c == 'references' else 's.' + c for c in _CANDIDATE_COLUMNS)}, "
        f"s.quality, s.judgements FROM {STAGE} s JOIN {tasks} t ON t.external_id = s.task_external_id "
        "WHERE s.ord = ANY(%s) ORDER BY s.ord",
        [list(pks)],
    )
    rows = []
    for ordinal, file_no, line, task_pk, *values in cursor.fetchall():
        fields = dict(zip((*_CANDIDATE_COLUMNS, "quality"), values[:-1]))
        # Django reads jsonb as text (its JSONField decodes); so does this cursor.
        for name in ("references", "twin", "extra"):
            fields[name] = _loads(fields[name])
        fields["source_task_id"] = task_pk
        judgements = _loads(values[-1])
        rows.append((pks[ordinal], fields, judgements, stream.location(file_no, line)))
    new_judgements = []
    for pk, fields, judgements, location in rows:
        fields["revision"] = replacement_revision(pk, fields, location)
        Candidate.objects.filter(pk=pk).update(**fields)
        Judgement.objects.filter(candidate_id=pk).delete()
        new_judgements.extend(judgement_rows(pk, {"judgements": judgements}))
    insert_rows(Judgement, new_judgements)


def _shift_ranks(cursor: Any) -> None:
    table = Candidate._meta.db_table
    cursor.execute(
        f"UPDATE {table} c SET rank = r.rank FROM {RANKS} r WHERE r.stored_id = c.id AND c.rank IS DISTINCT FROM r.rank"
    )


def compress_with_lz4(cursor: Any) -> None:
    """Texts of the import (instructions, harm tests: about 2 KB a candidate, past the size where
    PostgreSQL compresses a row) compressed with lz4 rather than pglz, which costs several times the
    CPU for about the same size. Set for the transaction: the staging table compresses once and the
    candidates take those values as they are. Reading either kind back is transparent."""
    cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
    row = cursor.fetchone()
    if row and row[0]:  # a server built without lz4 keeps pglz
        cursor.execute("SET LOCAL default_toast_compression = 'lz4'")


class _Phases:
    """Seconds per phase, logged at the end (benchmarks/import_bench.py --profile prints them)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

    def log(self) -> None:
        logger.info("import phases: %s", ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.seconds.items()))


def import_lines(
    lines: Iterable[tuple[fmt.Location, str | bytes]], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Validate and import numbered lines, streamed: no more than a line's worth of candidates is
    held in memory, however long the input."""
    return staged_import(fmt.parse_stream(lines, candidate_duplicates=False), replace=replace, progress=progress)


def import_parsed(parsed: fmt.ParseResult, *, replace: bool = False, progress: Progress | None = None) -> ImportSummary:
    if parsed.errors:
        raise ImportRefused(list(parsed.errors))
    return staged_import(parsed.records, replace=replace, progress=progress)


def staged_import(
    items: Iterable[fmt.Record | fmt.FormatError], *, replace: bool = False, progress: Progress | None = None
) -> ImportSummary:
    """Import a stream of records (or the errors of lines that are none), all or nothing.

    Raises ImportRefused naming every bad line."""
    summary = ImportSummary()
    stream = _Stream()
    phase = _Phases()
    with transaction.atomic(), connection.cursor() as django_cursor:
        cursor = django_cursor.cursor  # psycopg's own, for COPY
        cursor.execute("SET LOCAL work_mem = '64MB'")
        compress_with_lz4(cursor)
        _create_tables(cursor)
        with phase("validate+stage"):
            _stage(cursor, items, stream, progress)
        with phase("checks"):
            cursor.execute(
                f"CREATE TEMP TABLE {KEYS} AS SELECT ord, file_no, line, external_id, content_hash, quality "
                f"FROM {STAGE}"
            )
            errors = stream.errors + _duplicates(cursor, stream)
            if errors:
                raise ImportRefused([error for _, error in sorted(errors, key=lambda e: e[0])][: fmt.MAX_ERRORS])
            summary.source_tasks_created, task_errors = _source_tasks(cursor, stream, replace)
            if task_errors:
                raise ImportRefused(task_errors)
            to_replace, summary.unchanged, conflicts = _stored_matches(cursor, stream, replace)
        if not conflicts:
            with phase("rank"):
                summary.created = _rank(cursor, to_replace)
            with phase("insert"):
                _insert_new(cursor)
            with phase("replace+shift"):
                _replace(cursor, to_replace, stream)
                summary.replaced = len(to_replace)
                _shift_ranks(cursor)
        with phase("searches"):
            import_searches(stream.searches, {}, replace, conflicts, summary, progress)
        if conflicts:
            raise ImportRefused(conflicts)
        with phase("batch"):
            cursor.execute(
                f"SELECT c.id FROM {KEYS} k JOIN {Candidate._meta.db_table} c ON c.external_id = k.external_id"
            )
            summary.candidate_pks = [pk for (pk,) in cursor.fetchall()]
        _drop_tables(cursor)
        if summary.created + summary.replaced + summary.searches_created >= ANALYZE_AFTER:
            with phase("analyze"):
                refresh_statistics()
        body_done = time.perf_counter()
    # Outermost atomic block: the commit runs the deferred foreign key checks of every new row.
    phase.seconds["commit"] = time.perf_counter() - body_done
    phase.log()
    return summary
