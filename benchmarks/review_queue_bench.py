#!/usr/bin/env python
"""The review queue sorted, filtered and searched, and decisions in bulk, at scale.

Seeds N synthetic candidates (through the pipeline import) and decides a third of the top-K,
then times, as a curator: the queue page and `GET /api/review/queue/` with each order and a few
filters at K, the review page with a sorted and filtered listing, and `decisions_record_bulk`
on batches of 50 and 500 candidates (service alone, and the confirmed POST of the page). Prints
median and p95 of the time and the SQL query count of one request.

    python benchmarks/review_queue_bench.py [--reuse] [--candidates 20000] [--k 1000] [--requests 15]

Works in its own database, postgres://postgres@127.0.0.1:5432/veriharm_reviewbench unless
BENCH_DATABASE_URL says otherwise; without --reuse it is dropped and seeded afresh.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/veriharm_reviewbench"


def _database(url: str, reuse: bool) -> bool:
    """Creates the database unless reused; True when it needs seeding."""
    import psycopg

    server, _, name = url.rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None
        if exists and reuse:
            return False
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return True


def _setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _seed(n: int, k: int, curator: Any) -> None:
    from candidates.curation.review import decisions_record_bulk
    from candidates.models import Candidate
    from candidates.services import candidate_import_files
    from demo import generated as demo

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl"
        demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), n), path)
        candidate_import_files([str(path)])
    top = list(Candidate.objects.filter(rank__lte=k).order_by("rank").values_list("external_id", flat=True))
    for start in range(0, len(top) // 3, 500):
        decisions_record_bulk(
            external_ids=top[start : min(start + 500, len(top) // 3)],
            user=curator,
            verdict="reject",
            reason="unrealistic",
        )


def _curator() -> Any:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from veriharm_site.roles import CURATOR, ensure_roles

    ensure_roles()
    user, _ = get_user_model().objects.get_or_create(username="bench-curator")
    user.groups.add(Group.objects.get(name=CURATOR))
    return user


def _measure(label: str, call: Callable[[], Any], repeats: int) -> None:
    from django.db import connection

    # Counted by a wrapper: the test client's request_started signal empties Django's own query log.
    queries = []
    with connection.execute_wrapper(lambda execute, sql, *rest: queries.append(sql) or execute(sql, *rest)):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(f"{label:<58} {statistics.median(times):8.1f} {p95:8.1f} {len(queries):8d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--candidates", type=int, default=20_000)
    parser.add_argument("--k", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=15)
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    fresh = _database(url, args.reuse)
    _setup_django(url)
    curator = _curator()
    if fresh:
        print(f"seeding {args.candidates:,} candidates, a third of the top-{args.k} decided ...", flush=True)
        _seed(args.candidates, args.k, curator)

    from django.test import Client

    from candidates.curation.review import decisions_record_bulk
    from candidates.models import Candidate

    client = Client()
    client.force_login(curator)

    def get(url: str) -> Callable[[], Any]:
        def call() -> None:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        return call

    k = args.k
    print(f"{'what (K=' + str(k) + ')':<58} {'median':>8} {'p95':>8} {'queries':>8}   (ms)")
    for params in (
        "",
        "&sort=-decided",
        "&sort=quality",
        "&sort=-id",
        "&decision=undecided",
        "&decision=rejected&sort=-decided",
        "&perturbation=underspecification&q=bench",
        "&flagged=1",
        "&page=20",
    ):
        _measure(f"queue page ?k={k}{params}", get(f"/candidates/review/?k={k}{params}"), args.requests)
    _measure(
        f"GET /api/review/queue/?k={k}&sort=-decided", get(f"/api/review/queue/?k={k}&sort=-decided"), args.requests
    )
    _measure(
        f"review page rank 500 ?k={k}&sort=-rank&decision=undecided",
        get(f"/candidates/review/500/?k={k}&sort=-rank&decision=undecided"),
        args.requests,
    )

    ids = list(Candidate.objects.filter(rank__lte=k).order_by("rank").values_list("external_id", flat=True))
    for size in (50, 500):
        batch = ids[-size:]
        _measure(
            f"decisions_record_bulk, {size} candidates",
            lambda batch=batch: decisions_record_bulk(
                external_ids=batch, user=curator, verdict="reject", reason="harm_test_wrong"
            ),
            args.requests,
        )
    form = {"candidates": ids[:500], "verdict": "reject", "reason": "unrealistic", "confirmed": "1"}
    unconfirmed = form | {"confirmed": ""}

    def post(data: dict[str, Any]) -> Callable[[], Any]:
        def call() -> None:
            response = client.post(f"/candidates/review/?k={k}", data)
            assert response.status_code in (200, 302), response.status_code

        return call

    _measure("queue POST, 500 ticked: the confirm step", post(unconfirmed), args.requests)
    _measure("queue POST, 500 ticked: confirmed", post(form), args.requests)


if __name__ == "__main__":
    main()
