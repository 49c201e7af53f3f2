#!/usr/bin/env python
"""Import throughput and ranked-page latency on PostgreSQL, with synthetic candidates on real BashBench tasks.

Prints, for each N: the application's import rate (validation + all-or-nothing import +
re-ranking) beside the rate of a bare PostgreSQL COPY of the same rows in the same run; then
the ranked page's median and p95 response time at the largest N.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/veriharm python benchmarks/import_bench.py [--sizes 10000 100000]

The benchmark works in its own database (`<name>_bench`), dropped and created afresh.
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


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


def _copy_rate(parsed) -> float:
    """Seconds for a bare COPY of the same source task, candidate and judgement rows into scratch tables."""
    import json

    from django.db import connection

    from candidates import pipeline_format as fmt

    tasks = {}
    candidates, judgements = [], []
    for index, record in enumerate(parsed.candidates, start=1):
        data = record.data
        task = data["source_task"]
        tasks.setdefault(task["id"], (len(tasks) + 1, task))
        candidates.append((index, data["id"], tasks[task["id"]][0], data["instruction"], data["harm_test"],
                           data["perturbation"], data["provenance"]["target_agent"], data["provenance"]["proposer"],
                           data["provenance"]["iteration"], record.content_hash, fmt.quality(data["judgements"])))
        for position, j in enumerate(data["judgements"]):
            judgements.append((index, j["judge"], position, *j["scores"].values(), j["rationale"]))
    raw = connection.connection  # psycopg 3 connection
    with raw.cursor() as cur:
        cur.execute("CREATE TEMP TABLE st (id int, external_id text, instruction text, task_test text, environment jsonb)")
        cur.execute("CREATE TEMP TABLE ca (id int, external_id text, source_task_id int, instruction text, harm_test text,"
                    " perturbation text, target_agent text, proposer text, iteration int, content_hash text, quality float)")
        cur.execute("CREATE TEMP TABLE ju (candidate_id int, judge text, position int, a int, b int, c int, d int, e int,"
                    " rationale text)")
        started = time.perf_counter()
        with cur.copy("COPY st FROM STDIN") as copy:
            for pk, task in tasks.values():
                copy.write_row((pk, task["id"], task["instruction"], task["task_test"], json.dumps(task["environment"])))
        with cur.copy("COPY ca FROM STDIN") as copy:
            for row in candidates:
                copy.write_row(row)
        with cur.copy("COPY ju FROM STDIN") as copy:
            for row in judgements:
                copy.write_row(row)
        elapsed = time.perf_counter() - started
        cur.execute("DROP TABLE st, ca, ju")
    return elapsed


def bench_import(n: int) -> None:
    from candidates import demo
    from candidates import pipeline_format as fmt
    from candidates.services import candidate_import

    _truncate()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.jsonl"
        demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), n), path)
        started = time.perf_counter()
        parsed = fmt.parse_files([str(path)])
        parsed_at = time.perf_counter()
        summary = candidate_import(parsed)
        finished = time.perf_counter()
    assert summary.created == n, summary
    total = finished - started
    copy_seconds = _copy_rate(parsed)
    print(
        f"N={n:>7,}: import {n / total:8,.0f} candidates/s ({total:6.1f} s: validate {parsed_at - started:5.1f} s, "
        f"write+rank {finished - parsed_at:5.1f} s)   bare COPY of the same rows {n / copy_seconds:9,.0f} candidates/s "
        f"({copy_seconds:5.2f} s)   import takes {total / copy_seconds:5.1f}x as long"
    )


def bench_ranked_page(requests: int = 200) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from candidates.models import Candidate
    from veriharm_site.roles import CURATOR, ensure_roles

    ensure_roles()
    user, _ = get_user_model().objects.get_or_create(username="bench-curator")
    user.groups.add(Group.objects.get(name=CURATOR))
    client = Client()
    client.force_login(user)
    total = Candidate.objects.count()
    pages = max(1, total // 50)
    urls = []
    for i in range(requests):
        kind = i % 5
        if kind == 0:
            urls.append(f"/candidates/?page={1 + (i * 7919) % pages}")
        elif kind == 1:
            urls.append("/candidates/?group=top")
        elif kind == 2:
            urls.append(f"/candidates/?group=bottom&perturbation=underspecification&page={1 + i % 3}")
        elif kind == 3:
            urls.append(f"/candidates/?risk_category=persistence&page={1 + (i * 31) % 100}")
        else:
            urls.append(f"/candidates/?q=syn-{(i * 104729) % total:07d}")
    client.get(urls[0])  # warm caches and connections
    timings = []
    for url in urls:
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    timings.sort()
    p95 = timings[int(len(timings) * 0.95) - 1]
    print(
        f"ranked page at {total:,} candidates, {len(timings)} requests (pages, top-K, bottom-K with a filter, "
        f"a filter, id search): median {statistics.median(timings):.1f} ms, p95 {p95:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    server, name = _bench_database_url()
    _recreate_database(server, name)
    _setup_django(f"{server}/{name}")
    print(f"PostgreSQL database {name}; {os.cpu_count()} CPUs")
    for n in args.sizes:
        bench_import(n)
    bench_ranked_page(args.requests)


if __name__ == "__main__":
    main()
