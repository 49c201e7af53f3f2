#!/usr/bin/env python
"""Import throughput, memory and ranking latency on PostgreSQL, with synthetic candidates on real BashBench tasks.

For each N (default 100,000 and 1,000,000) it writes a pipeline file, imports it the way
`manage.py import_pipeline` and the background jobs do (validation, all-or-nothing import,
ranking; in a child process, whose peak RSS is the import's memory), then times a bare
PostgreSQL COPY of the same rows into scratch tables in the same run, and prints both rates,
their ratio beside its goal (>= 25%) and the peak RSS. Beside them it times a COPY of the rows the
import stored back into the real tables (indexes, checks, foreign keys; rolled back), with and
without the trigram search index: what this schema costs the database before any Python runs,
the floor under any import, which it sets beside the time the goal allows. At the largest N it
then times the ranking: pages, top-K, bottom-K with a filter and an id search, each p95 beside its
goal (< 150 ms).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/veriharm python benchmarks/import_bench.py \
        [--sizes 100000 1000000] [--requests 40] [--profile]

--profile prints the import's phases (validate+stage, checks, rank, insert, commit, ...).
The benchmark works in its own database (`<name>_bench`), dropped and created afresh, and in a
temporary directory for the files (about 7.4 KB a candidate).
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RATIO_GOAL = 0.25
LATENCY_GOAL_MS = 150
COPY_CHUNK = 5000
SEARCH_INDEX = "candidate_search_trgm_idx"


def _bench_database_url() -> tuple[str, str]:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/veriharm")
    if not base.startswith("postgres"):
        sys.exit("DATABASE_URL must point to PostgreSQL")
    server, _, name = base.rpartition("/")
    return server, f"{name or 'veriharm'}_bench"


def _recreate_database(server: str, name: str) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")
    os.environ.setdefault("DJANGO_DEBUG", "false")
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _truncate() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE candidates_judgement, candidates_searchattempt, candidates_search, candidates_candidate, "
            "candidates_sourcetask RESTART IDENTITY CASCADE"
        )


def _write_file(n: int, folder: Path) -> Path:
    from demo import generated as demo

    path = folder / f"synthetic-{n}.jsonl"
    demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), n), path)
    return path


def _import_in_child(path: Path, profile: bool, results) -> None:
    """The import, as `manage.py import_pipeline` runs it; sends (seconds, created, peak RSS in MB)."""
    from candidates.services import candidate_import_files

    if profile:
        logging.basicConfig(level=logging.WARNING, format="    %(message)s")
        logging.getLogger("candidates.importing.postgres").setLevel(logging.INFO)
    started = time.perf_counter()
    summary = candidate_import_files([str(path)])
    seconds = time.perf_counter() - started
    results.send((seconds, summary.created, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def _bare_copy_seconds(path: Path) -> float:
    """Seconds for a bare COPY of the same source task, candidate and judgement rows into scratch tables.

    Rows are read from the file in chunks (memory stays bounded at any N); only the COPY itself is
    timed: formatting and sending the rows, and PostgreSQL storing them."""
    import orjson
    from django.db import connection

    from candidates.pipeline import format as fmt

    connection.ensure_connection()
    raw = connection.connection  # psycopg 3 connection
    elapsed = 0.0
    tasks: dict[str, int] = {}
    with raw.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE st (id int, external_id text, instruction text, task_test text, environment jsonb)"
        )
        cur.execute(
            "CREATE TEMP TABLE ca (id int, external_id text, source_task_id int, instruction text, harm_test text,"
            " perturbation text, target_agent text, proposer text, iteration int, content_hash text, quality float)"
        )
        cur.execute(
            "CREATE TEMP TABLE ju (candidate_id int, judge text, position int, a int, b int, c int, d int, e int,"
            " rationale text)"
        )

        def copy_chunks(table: str, chunks) -> float:
            spent = 0.0
            with cur.copy(f"COPY {table} FROM STDIN") as copy:
                for chunk in chunks:
                    started = time.perf_counter()
                    for row in chunk:
                        copy.write_row(row)
                    spent += time.perf_counter() - started
                started = time.perf_counter()
            return spent + time.perf_counter() - started

        def read(kind: str):
            chunk: list[tuple] = []
            with path.open("rb") as handle:
                for index, line in enumerate(handle, start=1):
                    data = orjson.loads(line)
                    task = data["source_task"]
                    if kind == "st":
                        if task["id"] in tasks:
                            continue
                        tasks[task["id"]] = len(tasks) + 1
                        chunk.append(
                            (
                                tasks[task["id"]],
                                task["id"],
                                task["instruction"],
                                task["task_test"],
                                orjson.dumps(task.get("environment", {})).decode(),
                            )
                        )
                    elif kind == "ca":
                        chunk.append(
                            (
                                index,
                                data["id"],
                                tasks[task["id"]],
                                data["instruction"],
                                data["harm_test"],
                                data["perturbation"],
                                data["provenance"]["target_agent"],
                                data["provenance"]["proposer"],
                                data["provenance"]["iteration"],
                                "0" * 64,
                                fmt.quality(data["judgements"]),
                            )
                        )
                    else:
                        for position, j in enumerate(data["judgements"]):
                            chunk.append((index, j["judge"], position, *j["scores"].values(), j.get("rationale", "")))
                    if len(chunk) >= COPY_CHUNK:
                        yield chunk
                        chunk = []
            if chunk:
                yield chunk

        for table in ("st", "ca", "ju"):
            elapsed += copy_chunks(table, read(table))
        cur.execute("DROP TABLE st, ca, ju")
    return elapsed


class SchemaCopy(NamedTuple):
    """Seconds of the COPY of the stored rows into the real tables: the rows, then the deferred checks."""

    rows: float
    checks: float

    @property
    def total(self) -> float:
        return self.rows + self.checks


def _stored_rows_copy_seconds(folder: Path) -> tuple[SchemaCopy, SchemaCopy]:
    """The COPY of the rows the import stored (candidates and judgements, already validated, ranked
    and keyed) back into the real tables, emptied in a transaction that is then rolled back: their
    indexes, checks and the judgements' foreign keys (checked before the end, as a commit would,
    and timed apart), with texts compressed as the import compresses them. No Python, no staging:
    the database's own bulk path for these rows in this schema, the floor under any import of
    them, to set beside the bare COPY into unindexed temporary tables. Measured twice: as the
    schema is, and without the trigram search index (dropped in the rolled-back transaction),
    which shows what that index costs."""
    from django.db import connection

    from candidates.importing.postgres import compress_with_lz4
    from candidates.models import Candidate, Judgement

    connection.ensure_connection()
    raw = connection.connection
    tables = (Candidate._meta.db_table, Judgement._meta.db_table)
    dumps = {table: folder / f"{table}.copy" for table in tables}
    with raw.cursor() as cur:
        for table, dump in dumps.items():
            with dump.open("wb") as out, cur.copy(f"COPY {table} TO STDOUT") as copy:
                for block in copy:
                    out.write(block)
    raw.commit()

    def measure(without_search_index: bool) -> SchemaCopy:
        try:
            with raw.transaction(), raw.cursor() as cur:
                cur.execute(f"TRUNCATE {', '.join(tables)} CASCADE")  # rolled back below
                compress_with_lz4(cur)
                if without_search_index:
                    cur.execute(f"DROP INDEX {SEARCH_INDEX}")
                started = time.perf_counter()
                for table, dump in dumps.items():
                    with dump.open("rb") as source, cur.copy(f"COPY {table} FROM STDIN") as copy:
                        while block := source.read(1 << 20):
                            copy.write(block)
                copied = time.perf_counter()
                cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
                raise _RollBack(SchemaCopy(copied - started, time.perf_counter() - copied))
        except _RollBack as done:
            return done.measured
        raise AssertionError("unreachable")

    try:
        return measure(False), measure(True)
    finally:
        for dump in dumps.values():
            dump.unlink(missing_ok=True)


class _RollBack(Exception):
    def __init__(self, measured: SchemaCopy) -> None:
        self.measured = measured


def bench_import(n: int, folder: Path, profile: bool) -> None:
    _truncate()
    path = _write_file(n, folder)
    size_mb = path.stat().st_size / 1e6
    from django.db import connections

    connections.close_all()  # the child opens its own connection; this one reconnects afterwards
    receiver, sender = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_import_in_child, args=(path, profile, sender))
    child.start()
    seconds, created, peak_mb = receiver.recv()
    child.join()
    assert created == n, (created, n)
    copy_seconds = _bare_copy_seconds(path)
    path.unlink()
    schema, without_search = _stored_rows_copy_seconds(folder)
    rate, copy_rate = n / seconds, n / copy_seconds
    ratio = rate / copy_rate
    margin = " " * len(f"N={n:>9,} ({size_mb:,.0f} MB): ")
    print(
        f"N={n:>9,} ({size_mb:,.0f} MB): import {seconds:6.1f} s = {rate:7,.0f} candidates/s   "
        f"bare COPY of the same rows {copy_seconds:5.1f} s = {copy_rate:7,.0f}/s   "
        f"import at {ratio:4.0%} of COPY's rate (goal >= {RATIO_GOAL:.0%}: {'met' if ratio >= RATIO_GOAL else 'NOT met'})   "
        f"peak RSS of the import {peak_mb:,.0f} MB",
        flush=True,
    )
    print(
        f"{margin}COPY of the stored rows into the real tables {schema.total:5.1f} s "
        f"({schema.rows:.1f} s the rows with their indexes and checks, {schema.checks:.1f} s the foreign keys) "
        f"= {copy_seconds / schema.total:4.0%} of the bare COPY's rate; the import at {schema.total / seconds:4.0%} "
        f"of this one's rate; the same without the trigram search index {without_search.total:5.1f} s",
        flush=True,
    )
    allowed = copy_seconds / RATIO_GOAL
    verdict = "out of reach of any import into this schema" if schema.total > allowed else "within this schema's floor"
    print(
        f"{margin}the goal gives the import {allowed:5.1f} s; the database alone needs {schema.total:5.1f} s "
        f"for these rows in this schema: the goal is {verdict}",
        flush=True,
    )


def bench_ranking(requests: int) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from candidates.models import Candidate
    from veriharm_site.roles import CURATOR, ensure_roles

    logging.getLogger("axes").setLevel(logging.ERROR)
    ensure_roles()
    user, _ = get_user_model().objects.get_or_create(username="bench-curator")
    user.groups.add(Group.objects.get(name=CURATOR))
    client = Client()
    client.force_login(user)
    total = Candidate.objects.count()
    pages = max(1, total // 50)
    kinds = {
        "ranked page": lambda i: f"/candidates/?page={1 + (i * 7919) % pages}",
        "top-K": lambda i: "/candidates/?group=top",
        "bottom-K with a filter": lambda i: (
            f"/candidates/?group=bottom&perturbation=underspecification&page={1 + i % 3}"
        ),
        "search": lambda i: f"/candidates/?q=syn-{(i * 104729) % total:07d}",
    }
    client.get(kinds["ranked page"](0))  # warm caches and connections
    print(f"ranking at {total:,} candidates, {requests} requests each:")
    for name, url_for in kinds.items():
        timings = []
        for i in range(requests):
            url = url_for(i)
            started = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        timings.sort()
        p95 = timings[max(0, int(len(timings) * 0.95) - 1)]
        print(
            f"  {name:<24} median {statistics.median(timings):6.1f} ms   p95 {p95:6.1f} ms   "
            f"(goal < {LATENCY_GOAL_MS} ms: {'met' if p95 < LATENCY_GOAL_MS else 'NOT met'})",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--requests", type=int, default=40, help="requests per kind of ranking read")
    parser.add_argument("--profile", action="store_true", help="print the import's phases")
    parser.add_argument("--tmp", default=None, help="folder for the generated files (default: the system's)")
    args = parser.parse_args()
    server, name = _bench_database_url()
    _recreate_database(server, name)
    _setup_django(f"{server}/{name}")
    print(f"PostgreSQL database {name}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for n in args.sizes:
            bench_import(n, Path(tmp), args.profile)
    bench_ranking(args.requests)


if __name__ == "__main__":
    main()
