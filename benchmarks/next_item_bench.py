#!/usr/bin/env python
"""Latency of "next item" with concurrent annotators on PostgreSQL.

A 200-item study (100 of the top 150 and 100 of the bottom 150 of 1,000 synthetic candidates on
real BashBench tasks, 3 annotators per item) is labelled to the end by 20 annotators at once, each
in their own process with their own database connection. Every "next item" is timed: as the claim
service call, and, on a second identical study, as the annotator API request that also renders the
blind item (diff included). Two scenarios: annotators who spend a moment on each item (compressed
from the minutes people take), and no pauses at all, which saturates the machine. Prints median,
p95 and max, and checks that every item ended with exactly 3 labels.

    python benchmarks/next_item_bench.py [--annotators 20] [--items 200] [--read 2 6] [--keep]

Works in its own database, postgres://postgres@127.0.0.1:5432/veriharm_bench unless
BENCH_DATABASE_URL says otherwise, dropped and created afresh (and dropped at the end unless --keep).
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/veriharm_bench"
# Given an annotator and their generator, gets ready (log in) and returns the loop to time.
Work = Callable[[object, random.Random], Callable[[list[float], list[float]], None]]


def _server_and_name(url: str) -> tuple[str, str]:
    if not url.startswith("postgres"):
        sys.exit("the benchmark needs PostgreSQL")
    server, _, name = url.rpartition("/")
    return server, name


def _database(server: str, name: str, *, create: bool) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')


def _setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")
    os.environ["DJANGO_DEBUG"] = "false"  # no query log: it would grow for the whole run
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.core.management import call_command

    # Every annotator process logs in; axes would print four lines per login between the figures.
    logging.getLogger("axes").setLevel(logging.ERROR)
    call_command("migrate", verbosity=0)


def _pool(candidates: int) -> None:
    from candidates.services import candidate_import_files
    from demo import generated as demo

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl"
        demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), candidates), path)
        candidate_import_files([str(path)])


def _annotators(n: int) -> list:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from veriharm_site.roles import ANNOTATOR, ensure_roles

    ensure_roles()
    group = Group.objects.get(name=ANNOTATOR)
    users = []
    for i in range(n):
        user, _ = get_user_model().objects.get_or_create(username=f"bench-annotator-{i:02d}")
        user.groups.add(group)
        users.append(user)
    return users


def _study(name: str, annotators: list, items: int):
    from annotation.studies import services as study_services

    spec = study_services.StudySpec(name=name, seed=2026, top_k=150, per_group=items // 2, stratify_by="risk_category")
    return study_services.study_create(spec, annotators=annotators)


def _warm_up(user) -> None:
    """Load the URLconf, DRF, the serializers and the diff code once, before forking, as a running
    web server has done long before; otherwise every child pays for it on its first request."""
    from django.test import Client

    from candidates.diffs.diffing import side_by_side

    client = Client()
    client.force_login(user)
    for url in ("/api/annotation/my/studies/", "/annotation/"):
        assert client.get(url).status_code == 200
    side_by_side("warm up the diff", "warm up the diff code")


def _run(annotators: list, work: Work) -> tuple[list[float], list[float], float]:
    """Run `work` for every annotator at once, each in its own process with its own database
    connection (as separate web workers would be: threads of one process would mostly measure
    waiting for the interpreter lock). Returns next-item and submit timings (ms) and wall time."""
    from django.db import connections

    context = multiprocessing.get_context("fork")
    start = context.Barrier(len(annotators))
    results = context.Queue()

    def process(user, seed: int) -> None:
        mine_next: list[float] = []
        mine_submit: list[float] = []
        error = ""
        try:
            loop = work(user, random.Random(seed))
            start.wait()
            loop(mine_next, mine_submit)
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            error = f"{type(exc).__name__}: {exc}"
        finally:
            connections.close_all()
            results.put((mine_next, mine_submit, error))

    _warm_up(annotators[0])
    connections.close_all()  # children must not share the parent's connection
    processes = [context.Process(target=process, args=(u, i)) for i, u in enumerate(annotators)]
    began = time.perf_counter()
    for p in processes:
        p.start()
    next_ms: list[float] = []
    submit_ms: list[float] = []
    errors = []
    for _ in processes:
        mine_next, mine_submit, error = results.get()
        next_ms += mine_next
        submit_ms += mine_submit
        if error:
            errors.append(error)
    wall = time.perf_counter() - began
    for p in processes:
        p.join()
    if errors:
        sys.exit(f"an annotator failed: {errors[0]}")
    return next_ms, submit_ms, wall


def _service_work(study, reading: tuple[float, float]) -> Work:
    from annotation.labelling import services as labelling_services

    def work(user, rng: random.Random) -> Callable[[list[float], list[float]], None]:
        return lambda next_ms, submit_ms: loop(user, rng, next_ms, submit_ms)

    def loop(user, rng: random.Random, next_ms: list[float], submit_ms: list[float]) -> None:
        while True:
            t0 = time.perf_counter()
            assignment = labelling_services.item_claim_next(study.pk, user)
            next_ms.append((time.perf_counter() - t0) * 1000)
            if assignment is None:
                return
            time.sleep(rng.uniform(*reading))
            label = labelling_services.LabelInput(
                rng.random() < 0.8, rng.random() < 0.8, rng.random() < 0.9, seconds_spent=rng.uniform(30, 300)
            )
            t0 = time.perf_counter()
            labelling_services.label_submit(study.pk, assignment.item.token, user, label)
            submit_ms.append((time.perf_counter() - t0) * 1000)

    return work


def _api_work(study, reading: tuple[float, float]) -> Work:
    from django.test import Client

    def work(user, rng: random.Random) -> Callable[[list[float], list[float]], None]:
        client = Client()
        client.force_login(user)
        return lambda next_ms, submit_ms: loop(client, rng, next_ms, submit_ms)

    def loop(client: Client, rng: random.Random, next_ms: list[float], submit_ms: list[float]) -> None:
        while True:
            t0 = time.perf_counter()
            response = client.post(f"/api/annotation/my/studies/{study.pk}/next/")
            next_ms.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200, response.content
            item = response.json()["item"]
            if item is None:
                return
            time.sleep(rng.uniform(*reading))
            label = {
                "c1": rng.random() < 0.8,
                "c2": rng.random() < 0.8,
                "c3": rng.random() < 0.9,
                "seconds_spent": rng.uniform(30, 300),
            }
            t0 = time.perf_counter()
            response = client.put(
                f"/api/annotation/my/studies/{study.pk}/items/{item['token']}/label/",
                label,
                content_type="application/json",
            )
            submit_ms.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200, response.content

    return work


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(0.95 * len(ordered))) - 1)]


def _report(title: str, study, next_ms: list[float], submit_ms: list[float], wall: float) -> float:
    from annotation.models import Assignment

    per_item = Counter(
        Assignment.objects.filter(study=study, submitted_at__isnull=False).values_list("item_id", flat=True)
    )
    items = study.items.count()
    exact = len(per_item) == items and set(per_item.values()) == {study.annotators_per_item}
    print(
        f"  {title:<14} next item: median {statistics.median(next_ms):6.1f} ms, p95 {_p95(next_ms):6.1f} ms, "
        f"max {max(next_ms):6.1f} ms ({len(next_ms)} calls) | submit: median {statistics.median(submit_ms):6.1f} ms, "
        f"p95 {_p95(submit_ms):6.1f} ms | {len(submit_ms)} labels in {wall:5.1f} s | "
        f"every item has exactly {study.annotators_per_item} labels: {'yes' if exact else 'NO'}"
    )
    if not exact:
        sys.exit("an item ended with the wrong number of labels")
    return _p95(next_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument(
        "--read",
        type=float,
        nargs=2,
        default=[2.0, 6.0],
        metavar=("MIN", "MAX"),
        help="seconds each annotator spends on an item (people take minutes; compressed here)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    server, name = _server_and_name(url)
    _database(server, name, create=True)
    try:
        _setup_django(url)
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
        _pool(args.candidates)
        annotators = _annotators(args.annotators)
        print(
            f"PostgreSQL {version}, database {name}; {os.cpu_count()} CPUs; {args.candidates} candidates; "
            f"{args.items}-item studies, 3 annotators per item, {args.annotators} annotators at once"
        )
        scenarios = [
            (f"annotators read each item {args.read[0]:g}-{args.read[1]:g} s", (args.read[0], args.read[1])),
            ("no pauses at all (saturation)", (0.0, 0.0)),
        ]
        paced_p95 = []
        for number, (scenario, reading) in enumerate(scenarios):
            print(f"{scenario}; load average {os.getloadavg()[0]:.1f} at start")
            for title, make_work in (("claim service", _service_work), ("annotator API", _api_work)):
                study = _study(f"bench {number} {title}", annotators, args.items)
                p95 = _report(title, study, *_run(annotators, make_work(study, reading)))
                if number == 0:
                    paced_p95.append(p95)
        print(
            f"goal p95 < 50 ms with annotators reading: {'met' if max(paced_p95) < 50 else 'NOT met'} "
            f"(worst p95 {max(paced_p95):.1f} ms)"
        )
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            _database(server, name, create=False)


if __name__ == "__main__":
    main()
