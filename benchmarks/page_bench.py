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
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/veriharm_pagebench"
GOAL_MS = 150.0
STUDIES, ITEMS_PER_STUDY, VOTERS = 10, 50, 3
RUNS, RUN_CANDIDATES, RUN_REPETITIONS = 10, 150, 4
# A generation run of thousands of searches (budget 5), and one search of the longest shape a
# proposer may produce: 20 iterations of 80,000-character proposals.
GENERATION_SEARCHES, GENERATION_BUDGET = 5_000, 5
LONG_ITERATIONS, LONG_CHARS = 20, 80_000
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


# ---------------------------------------------------------------------------------------- seeding


def _seed_candidates(n: int) -> None:
    from candidates import demo
    from candidates.services import candidate_import_files

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl"
        demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), n), path)
        candidate_import_files([str(path)])


def _users() -> dict[str, Any]:
    """One user per role (the annotators: VOTERS of them), keyed by role name."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from veriharm_site.roles import ANNOTATOR, ROLE_PERMISSIONS, ensure_roles

    ensure_roles()
    users: dict[str, Any] = {}
    for role in ROLE_PERMISSIONS:
        count = VOTERS if role == ANNOTATOR else 1
        for i in range(count):
            user, _ = get_user_model().objects.get_or_create(username=f"bench-{role}-{i}")
            user.groups.add(Group.objects.get(name=role))
            users.setdefault(role, user)
            users[f"{role}-{i}"] = user
    return users


def _seed_studies(users: dict[str, Any]) -> None:
    from django.utils import timezone

    from annotation.models import Assignment, StudyItem
    from annotation.studies import services

    rng = random.Random(5)
    voters = [users[f"annotator-{i}"] for i in range(VOTERS)]
    now = timezone.now()
    for s in range(STUDIES):
        spec = services.StudySpec(name=f"bench study {s}", seed=100 + s, top_k=150, per_group=ITEMS_PER_STUDY // 2)
        study = services.study_create(spec, annotators=voters, created_by=users.get("admin"))
        votes = [
            Assignment(
                study=study,
                item=item,
                annotator=voter,
                claimed_at=now,
                expires_at=now,
                submitted_at=now,
                c1=rng.random() < 0.8,
                c2=rng.random() < 0.7,
                c3=rng.random() < 0.9,
                seconds_spent=rng.uniform(30, 300),
            )
            for item in StudyItem.objects.filter(study=study)
            for voter in voters
        ]
        Assignment.objects.bulk_create(votes, batch_size=2000)


def _seed_runs(users: dict[str, Any]) -> None:
    from django.utils import timezone

    from candidates.models import Candidate
    from evaluation.models import Agent, AgentKind, Run, Trial
    from evaluation.runs.agents import reference_agents_ensure
    from tests.factories import FinishedTrialFactory

    agents = reference_agents_ensure()
    while len(agents) < 4:
        agent, _ = Agent.objects.get_or_create(
            name=f"bench-command-{len(agents)}", kind=AgentKind.COMMAND, defaults={"config": {"command": "true"}}
        )
        agents.append(agent)
    agents = agents[:4]
    rng = random.Random(9)
    now = timezone.now()
    top = list(
        Candidate.objects.filter(rank__isnull=False).order_by("rank").values_list("pk", "revision")[:RUN_CANDIDATES]
    )
    for r in range(RUNS):
        run = Run.objects.create(
            name=f"bench run {r}",
            created_by=users.get("admin"),
            backend="local",
            repetitions=RUN_REPETITIONS,
            selection={"kind": "top_k", "k": RUN_CANDIDATES},
        )
        run.agents.set(agents)
        trials = []
        for pk, revision in top:
            for agent in agents:
                for repetition in range(1, RUN_REPETITIONS + 1):
                    r_task, r_harm = int(rng.random() < 0.7), int(rng.random() < 0.3)
                    trials.append(
                        FinishedTrialFactory.build(
                            run=run,
                            candidate_id=pk,
                            agent=agent,
                            repetition=repetition,
                            candidate_revision=revision,
                            r_task=r_task,
                            r_harm=r_harm,
                            agent_exit_code=0,
                            agent_duration=rng.uniform(1, 60),
                            task_exit_code=1 - r_task,
                            task_duration=rng.uniform(0.1, 2),
                            harm_exit_code=r_harm,
                            harm_duration=rng.uniform(0.1, 2),
                            agent_output="ok\n" * 20,
                            started_at=now,
                        )
                    )
        Trial.objects.bulk_create(trials, batch_size=4000)


def _seed_searches(n: int) -> None:
    """n searches (budget 5, attempts up to the first harmful success), each success keeping a
    candidate, as the reports read them; the pipeline's synthetic candidates come without."""
    from candidates.models import Candidate, Search, SearchAttempt

    rng = random.Random(13)
    kept = list(Candidate.objects.order_by("pk").values_list("pk", "target_agent", "proposer")[:n])
    searches, outcomes = [], []
    for i, (pk, agent, proposer) in enumerate(kept):
        first = rng.choice([1, 1, 2, 2, 3, 4, 5, None, None, None])
        searches.append(
            Search(
                source_task_external_id=f"bench-task-{i}",
                target_agent=agent,
                proposer=proposer,
                budget=5,
                candidate_id=pk if first else None,
                succeeded=first is not None,
                first_success=first,
                content_hash="0" * 64,
            )
        )
        outcomes.append(first)
    Search.objects.bulk_create(searches, batch_size=5000)
    attempts = [
        SearchAttempt(
            search=search,
            iteration=iteration,
            task_passed=iteration == first or rng.random() < 0.7,
            harm_detected=iteration == first,
        )
        for search, first in zip(searches, outcomes)
        for iteration in range(1, (first or 5) + 1)
    ]
    SearchAttempt.objects.bulk_create(attempts, batch_size=10000)


def _seed_decisions(users: dict[str, Any]) -> None:
    """A curator's decisions on the top-K, some of them changed later (the latest one counts)."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from candidates.models import Candidate, Decision

    rng = random.Random(17)
    now = timezone.now()
    decisions = []
    top = Candidate.objects.filter(rank__lte=settings.VERIHARM_TOP_K).values_list("pk", "revision")
    for pk, revision in top:
        for step in range(rng.choice([1, 1, 1, 2])):
            approve = rng.random() < 0.6
            decisions.append(
                Decision(
                    candidate_id=pk,
                    verdict="approve" if approve else "reject",
                    reason="valid" if approve else "harm_test_wrong",
                    candidate_revision=revision,
                    decided_by=users["curator"],
                    decided_at=now - timedelta(hours=2 - step),
                )
            )
    Decision.objects.bulk_create(decisions)


def _seed_generation(users: dict[str, Any]) -> None:
    """A generation run of GENERATION_SEARCHES searches, each with the steps it recorded (the seed
    rollout, then per iteration a proposal, its check and its rollout, up to a harmful success:
    40% kept, 50% out of iterations, 10% still queued), and a run of one search of LONG_ITERATIONS
    proposals of LONG_CHARS characters, each rewriting a third of the previous one's lines."""
    from django.utils import timezone

    from evaluation.generation.models import GenerationRun, GenerationSearch, GenerationStep
    from evaluation.generation.states import RunStatus, SearchEnding, SearchStatus, StepKind
    from evaluation.models import Agent, AgentKind
    from tests.evaluation.generation.recorded import long_search_steps, long_task

    rng = random.Random(21)
    now = timezone.now()
    agents = [
        Agent.objects.get_or_create(
            name=f"bench-target-{i}", kind=AgentKind.COMMAND, defaults={"config": {"command": "true"}}
        )[0]
        for i in range(4)
    ]
    proposers = [{"kind": "scripted", "name": f"bench proposer {i}"} for i in range(2)]
    judges = [{"kind": "scripted", "temperament": "strict", "name": "scripted demo judge (strict)"}]
    run = GenerationRun.objects.create(
        name="bench generation",
        created_by=users.get("admin"),
        budget=GENERATION_BUDGET,
        backend="local",
        proposer_configs=proposers,
        judge_configs=judges,
        perturbations=["underspecification"],
    )
    run.agents.set(agents)
    searches, outcomes = [], []
    for n in range(GENERATION_SEARCHES):
        draw = rng.random()
        kept = rng.randint(1, GENERATION_BUDGET) if draw < 0.4 else None
        done = draw < 0.9
        ending = (SearchEnding.KEPT if kept else SearchEnding.BUDGET_EXHAUSTED) if done else ""
        searches.append(
            GenerationSearch(
                run=run,
                agent=agents[n % len(agents)],
                source_task_id=f"bench-source-{n // (len(agents) * len(proposers))}",
                source_task={"id": f"bench-source-{n}", "instruction": "Rotate the logs."},
                proposer=proposers[(n // len(agents)) % len(proposers)]["name"],
                status=SearchStatus.FINISHED if done else SearchStatus.QUEUED,
                ending=ending,
                kept_iteration=kept,
                finished_at=now if done else None,
            )
        )
        outcomes.append((done, kept))
    GenerationSearch.objects.bulk_create(searches, batch_size=5000)
    steps = []
    for search, (done, kept) in zip(searches, outcomes):
        if not done:
            continue
        steps.append(GenerationStep(search=search, kind=StepKind.SEED, iteration=0, r_task=1, r_harm=0))
        for i in range(1, (kept or GENERATION_BUDGET) + 1):
            harmful = int(i == kept)
            steps += [
                GenerationStep(
                    search=search, kind=StepKind.PROPOSAL, iteration=i, instruction="Rotate the logs, all of them."
                ),
                GenerationStep(search=search, kind=StepKind.NOOP_CHECK, iteration=i, r_task=0, r_harm=0),
                GenerationStep(
                    search=search, kind=StepKind.ROLLOUT, iteration=i, r_task=1, r_harm=harmful, transcript="$ ls"
                ),
            ]
        if kept:
            steps.append(
                GenerationStep(
                    search=search, kind=StepKind.JUDGEMENT, iteration=0, judge=judges[0]["name"], scores={"c1": 3}
                )
            )
    GenerationStep.objects.bulk_create(steps, batch_size=10000)

    long_run = GenerationRun.objects.create(
        name="bench long search",
        created_by=users.get("admin"),
        budget=LONG_ITERATIONS,
        backend="local",
        proposer_configs=proposers[:1],
        judge_configs=judges,
        perturbations=["underspecification"],
        status=RunStatus.FINISHED,
        finished_at=now,
    )
    long_run.agents.set(agents[:1])
    seed = long_task(rng, 2_000)
    search = GenerationSearch.objects.create(
        run=long_run,
        agent=agents[0],
        source_task_id="bench-long-source",
        source_task={"id": "bench-long-source", "instruction": seed},
        proposer=proposers[0]["name"],
        status=SearchStatus.FINISHED,
        ending=SearchEnding.BUDGET_EXHAUSTED,
        finished_at=now,
    )
    steps = long_search_steps(search, rng, LONG_ITERATIONS, LONG_CHARS)
    GenerationStep.objects.bulk_create(steps)


def _seed(candidates: int) -> None:
    from django.db import connection

    t0 = time.perf_counter()
    _seed_candidates(candidates)
    print(f"  {candidates:,} candidates imported in {time.perf_counter() - t0:.0f} s", flush=True)
    users = _users()
    t1 = time.perf_counter()
    _seed_studies(users)
    _seed_runs(users)
    _seed_searches(candidates)
    _seed_decisions(users)
    _seed_generation(users)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(f"  studies, votes and runs seeded in {time.perf_counter() - t1:.0f} s", flush=True)


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
    seed = not (args.reuse and _database_exists(server, name))
    if seed:
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
    if seed:
        _seed(args.candidates)
    users = _users()
    from evaluation.generation.models import GenerationRun

    if not GenerationRun.objects.filter(name="bench generation").exists():
        t0 = time.perf_counter()
        _seed_generation(users)
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
