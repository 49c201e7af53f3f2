#!/usr/bin/env python
"""Latency and query count of every page and API list at scale, walked as each role.

Seeds 100,000 synthetic candidates (through the pipeline import), 10 studies of 50 items with 3
annotators each and every vote in, 10 finished runs of 150 candidates x 4 agents x 4
repetitions (24,000 trials), one search per candidate (100,000, with their attempts; 70% kept a
candidate), a curator's decisions on the top-K, a generation run of 5,000 searches with their
steps, and a generation search of 20 iterations of 80,000-character proposals (the pages of both
are walked; the search page is also read with its diffs not yet computed, the cache empty). Then walks every GET route of the URL resolver (so new routes are
included without editing this file), ids filled from the seeded data, as every role that may see
it; a route that shows page numbers is also read at its last page, and the review queue's routes
also at K=1,000, and the ranking in other orders than its own. Prints per route and role the
median and p95 of the response time, the number of SQL queries of one request, and the goal.

    python benchmarks/page_bench.py [--reuse] [--requests 15] [--candidates 100000] [--only REGEX]

Works in its own database, postgres://postgres@127.0.0.1:5432/veriharm_pagebench unless
BENCH_DATABASE_URL says otherwise. Without --reuse it is dropped and seeded afresh (a few minutes);
with --reuse an already seeded database is used as it is (and seeded if it does not exist).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from page_seed import seed, seed_generation, seed_users  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/veriharm_pagebench"
GOAL_MS = 150.0
# Downloads, not pages: they stream the whole data set by design (benchmarks/import_bench.py times
# the export). Also the routes that only accept writes, and the login pages.
SKIP_NAMES = re.compile(r"export|jsonl|bundle|tar\.gz|final-state|highlight|login|logout|schema|docs")
# Routes that list nothing without a filter.
QUERIES = {"api/decisions/": "?candidate={external_id}", "api/revisions/": "?candidate={external_id}"}
LAST_PAGE = re.compile(r"[?&]page=(\d+)")
# Routes also read with these query strings: the review queue (its page, its API and the review
# page, which draws the queue's strip) at a K well beyond the default, as curators widen it to
# replace rejected candidates; it draws one cell per candidate of the top-K.
# The ranking (page and API) in each kind of order: by id, by Q from the lowest, by a filter column
# (each from its index), also deep (page 1,000) and under a filter.
RANKING_SORTS = (
    "sort=-id",
    "sort=quality",
    "sort=-risk_category",
    "sort=proposer&page=1000",
    "sort=-id&perturbation=underspecification&page=500",
)
VARIANTS = {
    "candidates/": RANKING_SORTS,
    "api/candidates/": RANKING_SORTS,
    "candidates/review/": ("k=1000",),
    "candidates/review/<number:rank>/": ("k=1000",),
    "api/review/queue/": ("k=1000",),
    "evaluation/generation/searches/<number:pk>/": ("iteration=1",),
}


def _server_and_name(url: str) -> tuple[str, str]:
    if not url.startswith("postgres"):
        sys.exit("the benchmark needs PostgreSQL")
    server, _, name = url.rpartition("/")
    return server, name


def _database_exists(server: str, name: str) -> bool:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def _database_create(server: str, name: str) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")
    os.environ["DJANGO_DEBUG"] = "false"  # no query log while timing; counted separately
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    import logging

    import django

    django.setup()
    logging.getLogger("django.request").setLevel(logging.ERROR)  # refusals of other roles are expected
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# ---------------------------------------------------------------------------------------- walking


def _ids(users: dict[str, Any]) -> dict[str, str]:
    from annotation.models import Assignment, Study
    from candidates.models import Candidate
    from evaluation.models import Run, Trial

    run = Run.objects.order_by("-pk").first()
    trial = Trial.objects.filter(run=run).order_by("pk").first()
    study = Study.objects.order_by("-pk").first()
    mine = Assignment.objects.filter(study=study, annotator=users["annotator"]).select_related("item").first()
    top = Candidate.objects.filter(rank__isnull=False).order_by("rank").first()
    ids = {
        "run": str(run.pk) if run else None,
        "trial": str(trial.pk) if trial else None,
        "agent": str(trial.agent_id) if trial else None,
        "study": str(study.pk) if study else None,
        "token": mine.item.token if mine else None,
        "rank": "1",
        "external_id": trial.candidate.external_id if trial else (top.external_id if top else None),
    }
    from candidates.models import Release

    release = Release.objects.order_by("-pk").first()
    ids["release"] = str(release.pk) if release else None
    from evaluation.generation.models import GenerationRun, GenerationSearch

    generation = GenerationRun.objects.filter(name="bench generation").first()
    long_search = GenerationSearch.objects.filter(run__name="bench long search").first()
    ids["generation_run"] = str(generation.pk) if generation else None
    ids["generation_search"] = str(long_search.pk) if long_search else None
    try:
        from candidates.models import ImportJob

        job = ImportJob.objects.order_by("-pk").first()
        ids["job"] = str(job.pk) if job else None
    except ImportError:
        ids["job"] = None
    return ids


def _fill(route: str, ids: dict[str, str]) -> str | None:
    """The route with its converters replaced by seeded ids (None: nothing seeded fits)."""

    def value(match: re.Match) -> str:
        name = match.group(2)
        if name == "pk":
            if route.startswith(("candidates/releases", "api/releases")):
                key = "release"
            elif "generation/runs/<number:pk>" in route:
                key = "generation_run"
            elif "generation/searches/<number:pk>" in route:
                key = "generation_search"
            elif "import/jobs" in route:
                key = "job"
            elif "trials/<number:pk>" in route:
                key = "trial"
            elif "studies/<number:pk>" in route:
                key = "study"
            else:
                key = "run"
        else:
            key = {"study_id": "study"}.get(name, name)
        found = ids.get(key)
        if found is None:
            raise LookupError(key)
        return found

    try:
        return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route) + QUERIES.get(route, "").format(**ids)
    except LookupError:
        return None


def _routes() -> list[tuple[str, str]]:
    from django.urls import URLPattern, URLResolver, get_resolver

    def walk(patterns, prefix: str = ""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern), pattern.name or ""

    return [
        (route, name)
        for route, name in walk(get_resolver().url_patterns)
        if route and not route.startswith("admin/") and not SKIP_NAMES.search(route + " " + name)
    ]


def _allows_get(route: str) -> bool:
    from django.urls import resolve

    callback = resolve("/" + re.sub(r"<(?:\w+:)?\w+>", "1", route)).func
    cls = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    return cls is None or hasattr(cls, "get")


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def _last_page(response) -> int | None:
    content_type = response.get("Content-Type", "")
    if "json" in content_type:
        data = response.json()
        if isinstance(data, dict) and data.get("next") and data.get("count") and data.get("results"):
            return -(-data["count"] // len(data["results"]))
        return None
    if "html" in content_type:
        pages = [int(n) for n in LAST_PAGE.findall(response.content.decode(errors="replace"))]
        return max(pages) if pages and max(pages) > 1 else None
    return None


def _measure(client, url: str, requests: int) -> tuple[int, list[float], int, Any]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    count = len(queries)  # read now: the next request empties the connection's query log
    times = []
    for _ in range(requests):
        t0 = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
    return response.status_code, times, count, response


def _walk(users: dict[str, Any], requests: int, only: re.Pattern | None = None) -> None:
    from django.test import Client

    from veriharm_site.roles import ANNOTATOR, ROLE_PERMISSIONS

    ids = _ids(users)
    clients = {}
    for role in ROLE_PERMISSIONS:
        client = Client(raise_request_exception=False)
        client.force_login(users[role])
        clients[role] = client
    over, measured, errors = [], 0, []
    print(
        f"{'route':<62} {'role':<10} {'status':>6} {'median':>8} {'p95':>8} {'queries':>7} {'kB':>6}"
        f"  goal p95 < {GOAL_MS:.0f} ms"
    )
    for route, _name in _routes():
        if not _allows_get(route) or (only is not None and not only.search("/" + route)):
            continue
        url = _fill(route, ids)
        if url is None:
            print(f"{'/' + route:<62} {'-':<10} {'':>6} {'':>8} {'':>8} {'':>7}  not measured: nothing seeded fits")
            continue
        for role, client in clients.items():
            status, times, queries, response = _measure(client, url, 1)
            if status in (302, 403):
                continue  # not this role's page
            if status == 404:
                if role != ANNOTATOR and ("/my/" in url or "annotation/s/" in url):
                    continue  # an annotator's own study pages: only its members see them
                errors.append(f"{url} as {role}")
                continue
            urls = [url]
            last = _last_page(response) if status == 200 else None
            if last:
                urls.append(f"{url}{'&' if '?' in url else '?'}page={last}")
            urls.extend(f"{url}{'&' if '?' in url else '?'}{variant}" for variant in VARIANTS.get(route, ()))
            for target in urls:
                status, times, queries, answer = _measure(client, target, requests)
                size = len(answer.content) / 1000 if not answer.streaming else 0
                median, p95 = statistics.median(times), _p95(times)
                measured += 1
                flag = "" if p95 < GOAL_MS and status < 500 else "  OVER" if status < 500 else "  ERROR"
                if flag:
                    over.append(f"{target} as {role} ({p95:.0f} ms, status {status})")
                print(
                    f"{target:<62} {role:<10} {status:>6} {median:>6.1f}ms {p95:>6.1f}ms {queries:>7} {size:>6.0f}{flag}",
                    flush=True,
                )
    print(
        f"summary: {measured} measured, {len(over)} over the goal of p95 < {GOAL_MS:.0f} ms; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for line in over:
        print(f"  over: {line}")
    for line in errors:
        print(f"  not found: {line}")


def _cold_search_views(users: dict[str, Any], requests: int) -> None:
    """The long generation search's page as a viewer reads it first: its diffs not yet computed
    (Django's cache emptied before each request), at its default iteration and at another."""
    from django.core.cache import cache
    from django.test import Client

    ids = _ids(users)
    if ids.get("generation_search") is None:
        return
    client = Client(raise_request_exception=False)
    client.force_login(users["viewer"])
    url = f"/evaluation/generation/searches/{ids['generation_search']}/"
    for target in (url, f"{url}?iteration=10"):
        times = []
        for _ in range(requests):
            cache.clear()
            t0 = time.perf_counter()
            response = client.get(target)
            times.append((time.perf_counter() - t0) * 1000)
        print(
            f"{target:<62} {'viewer':<10} {response.status_code:>6} {statistics.median(times):>6.1f}ms "
            f"{_p95(times):>6.1f}ms {'':>7} {len(response.content) / 1000:>6.0f}  cold: diffs computed",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=15, help="timed requests per route and role")
    parser.add_argument("--reuse", action="store_true", help="use the seeded database if it exists")
    parser.add_argument("--only", type=re.compile, help="walk only the routes this regular expression finds")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    server, name = _server_and_name(url)
    fresh = not (args.reuse and _database_exists(server, name))
    if fresh:
        _database_create(server, name)
    _setup_django(url)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    print(
        f"PostgreSQL {version}, database {name}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    if fresh:
        seed(args.candidates)
    users = seed_users()
    from evaluation.generation.models import GenerationRun

    if not GenerationRun.objects.filter(name="bench generation").exists():
        t0 = time.perf_counter()
        seed_generation(users)
        print(f"  generation runs seeded in {time.perf_counter() - t0:.0f} s", flush=True)
    from candidates.models import Candidate, Search
    from evaluation.models import Trial

    print(
        f"{Candidate.objects.count():,} candidates, {Trial.objects.count():,} trials, "
        f"{Search.objects.count():,} searches; "
        f"{args.requests} timed requests per route and role",
        flush=True,
    )
    _walk(users, args.requests, args.only)
    if args.only is None or args.only.search("/evaluation/generation/searches/"):
        _cold_search_views(users, min(args.requests, 5))


if __name__ == "__main__":
    main()
