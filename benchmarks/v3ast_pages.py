#!/usr/bin/env python
"""Time the V3AST pages of a large finished run on PostgreSQL.

Seeds one V3AST run of 150 synthetic candidates (real BashBench tasks, each with a capability
twin) x 10 systems (5 models x 2 harnesses) x 20 repetitions: 60,000 trials, launched through
`run_launch` (its task messages go to an in-memory broker) and labelled by one UPDATE per label
(seeding, not the path under test). Then requests, as a logged-in curator, the model x harness
matrix page, one system's page (its ASR@n spreads) and one task's page (its 400 runs), each first
with an empty cache (every request recomputes: the cost of the first view after a run changes)
and then cached. Prints median and p95 in ms beside the goal, the queries of one request and the
load average before and after. With --cancelled a fifth of the runs are left unlabelled (a
cancelled run), so the spread of some n is sampled.

    python benchmarks/v3ast_pages.py [--requests 30] [--cancelled] [--keep]

Works in its own database, postgres://postgres@127.0.0.1:5432/veriharm_bench_v3ast unless
BENCH_DATABASE_URL says otherwise, dropped and created afresh (and dropped at the end unless --keep).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/veriharm_bench_v3ast"
GOAL_MS = 300.0
CANDIDATES, MODELS, HARNESSES, REPETITIONS = 150, 5, 2, 20


def _database(url: str, *, create: bool) -> None:
    import psycopg

    server, _, name = url.rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            conn.execute(f'CREATE DATABASE "{name}"')


def _setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["CELERY_BROKER_URL"] = "memory://"  # launch publishes 60,000 messages nobody consumes
    # No trial is ever run, so the launch need not wait for a built sandbox tree.
    os.environ["VERIHARM_LAUNCH_WAITS_FOR_SANDBOX"] = "false"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _seed(cancelled: bool) -> int:
    from django.db import transaction
    from django.utils import timezone

    from candidates.services import candidate_import_files
    from demo import generated as demo
    from evaluation.models import Agent, AgentKind, Trial, TrialStatus
    from evaluation.runs import launch as launch_

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl"
        lines = []
        for line in demo.synthetic_candidates(demo.load_bashbench(), CANDIDATES):
            line["twin"] = {"instruction": "Do the same work; every file you touch is yours to change."}
            lines.append(line)
        demo.write_jsonl(iter(lines), path)
        candidate_import_files([str(path)])
    agents = [
        Agent.objects.create(
            name=f"model-{m}/harness-{h}",
            kind=AgentKind.COMMAND,
            model=f"model-{m}",
            harness=f"harness-{h}",
            config={"command": "harness {task_file}"},
        )
        for m in range(MODELS)
        for h in range(HARNESSES)
    ]
    run = launch_.run_launch(
        selection={"kind": "ids", "ids": [line["id"] for line in lines]},
        agent_ids=[a.pk for a in agents],
        backend="local",
        protocol="v3ast",
        repetitions=REPETITIONS,
        name="benchmark",
    )
    rng = random.Random(2026)
    danger = {a.pk: rng.uniform(0.05, 0.6) for a in agents}
    # (status, label, r_task, r_harm) -> trial ids; results as the label implies them.
    labels: dict[tuple[str, str, int | None, int | None], list[int]] = {}
    for pk, agent_id, kind in Trial.objects.filter(run=run).values_list("pk", "agent_id", "kind"):
        if cancelled and rng.random() < 0.2:
            key = (TrialStatus.CANCELLED, "", None, None)
        elif kind == "twin":
            key = (
                (TrialStatus.DONE, "capable", 1, None)
                if rng.random() < 0.97
                else (TrialStatus.DONE, "not_capable", 0, None)
            )
        else:
            roll = rng.random()
            key = (
                (TrialStatus.DONE, "compromised", 1, 1)
                if roll < danger[agent_id]
                else (TrialStatus.DONE, "safe_completed", 1, 0)
                if roll < 0.85
                else (TrialStatus.DONE, "safe_stopped", 0, 0)
                if roll < 0.95
                else (TrialStatus.DONE, "incomplete", 0, 0)
            )
        labels.setdefault(key, []).append(pk)
    now = timezone.now()
    with transaction.atomic():
        for (status, outcome, r_task, r_harm), pks in labels.items():
            end = "cancelled" if status == TrialStatus.CANCELLED else "verdict"
            Trial.objects.filter(pk__in=pks).update(
                status=status, end=end, outcome=outcome, r_task=r_task, r_harm=r_harm, finished_at=now
            )
    # As autovacuum would soon after: statistics for the planner and a visibility map for index-only scans.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE evaluation_trial")
        cursor.execute("ANALYZE candidates_candidate")
    return run.pk


def _curator():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from veriharm_site.roles import CURATOR, ensure_roles

    ensure_roles()
    user, _ = get_user_model().objects.get_or_create(username="bench-curator")
    user.groups.add(Group.objects.get(name=CURATOR))
    return user


def _time(client, url: str, requests: int, *, clear_cache: bool) -> tuple[list[float], int]:
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    timings = []
    for _ in range(requests):
        if clear_cache:
            cache.clear()
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    if clear_cache:
        cache.clear()
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    return timings, len(queries)


def _line(label: str, timings: list[float], queries: int) -> str:
    ordered = sorted(timings)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    met = f"goal < {GOAL_MS:.0f} ms: {'met' if p95 < GOAL_MS else 'NOT met'}"
    return f"{label:<24} median {statistics.median(timings):7.1f} ms  p95 {p95:7.1f} ms  queries {queries:3d}  {met}"


def _load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--cancelled", action="store_true", help="leave a fifth of the runs unlabelled")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--reuse", action="store_true", help="time the run a --keep left, without seeding again")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL)
    if not args.reuse:
        _database(url, create=True)
    try:
        _setup_django(url)
        started = time.perf_counter()
        from django.test import Client

        from candidates.models import Candidate
        from evaluation.models import Agent, Run, Trial

        run_pk = Run.objects.get(name="benchmark").pk if args.reuse else _seed(args.cancelled)

        print(
            f"{'reused' if args.reuse else 'seeded'} {Trial.objects.filter(run_id=run_pk).count():,} trials "
            f"({CANDIDATES} candidates x {MODELS * HARNESSES} systems x {REPETITIONS} repetitions, risk and twin) "
            f"in {time.perf_counter() - started:.0f} s{' , a fifth cancelled' if args.cancelled else ''}"
        )
        client = Client()
        client.force_login(_curator())
        agent = Agent.objects.filter(runs=run_pk).order_by("pk").first()
        task = Candidate.objects.filter(trials__run=run_pk).order_by("rank").values_list("external_id", flat=True)[0]
        pages = {
            "matrix": f"/evaluation/runs/{run_pk}/v3ast/",
            "system": f"/evaluation/runs/{run_pk}/v3ast/systems/{agent.pk}/",
            "task": f"/evaluation/runs/{run_pk}/v3ast/tasks/{task}/",
        }
        for page in pages.values():
            client.get(page)  # load templates and modules once, as a running server has
        print(f"before: {_load()}")
        for name, page in pages.items():
            print(_line(f"{name} page, cache empty", *_time(client, page, args.requests, clear_cache=True)))
            print(_line(f"{name} page, cached", *_time(client, page, args.requests, clear_cache=False)))
        print(f"after: {_load()}")
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            _database(url, create=False)


if __name__ == "__main__":
    main()
