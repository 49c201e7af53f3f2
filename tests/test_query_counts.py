"""No page or API list runs a query per row: every GET route, as each role that may read it, runs as
many queries when the newest study, run and candidate lists are three times as large.

The routes come from the URL resolver, so a new page is covered without editing this file.
(Speed itself is measured by benchmarks/page_bench.py, not here.)
"""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils import timezone
from rest_framework.test import APIClient

from tests.conftest import make_user
from tests.factories import AgentFactory, FinishedTrialFactory
from veriharm_site.roles import ADMIN, ANNOTATOR, CURATOR, VIEWER

pytestmark = pytest.mark.django_db

# Downloads stream everything by design; the others are not pages.
SKIPPED = re.compile(r"export|jsonl|bundle|tar\.gz|final-state|highlight|login|logout|schema|docs")
QUERIES = {"api/decisions/": "?candidate={external_id}", "api/revisions/": "?candidate={external_id}"}
VOTERS = 3


def _routes() -> list[str]:
    def walk(patterns, prefix: str = ""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern), pattern.name or ""

    found = []
    for route, name in walk(get_resolver().url_patterns):
        if not route or route.startswith("admin/") or SKIPPED.search(f"{route} {name}"):
            continue
        callback = resolve("/" + re.sub(r"<(?:\w+:)?\w+>", "1", route)).func
        cls = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        if cls is None or hasattr(cls, "get"):
            found.append(route)
    return found


def _import(n: int) -> None:
    from candidates.services import candidate_import_files
    from demo import generated as demo

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl"
        demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), n), path)
        candidate_import_files([str(path)])


def _add_study(number: int, size: int, voters: list, creator) -> None:
    from annotation.models import Assignment, StudyItem
    from annotation.studies import services

    rng = random.Random(number)
    spec = services.StudySpec(name=f"scale {number}", seed=number, top_k=40, per_group=size)
    study = services.study_create(spec, annotators=voters, created_by=creator)
    now = timezone.now()
    Assignment.objects.bulk_create(
        [
            Assignment(
                study=study,
                item=item,
                annotator=voter,
                claimed_at=now,
                expires_at=now,
                submitted_at=now,
                c1=rng.random() < 0.8,
                c2=rng.random() < 0.6,
                c3=True,
                seconds_spent=60,
            )
            for item in StudyItem.objects.filter(study=study)
            for voter in voters
        ]
    )


def _add_run(number: int, size: int, agents: list, creator) -> None:
    from candidates.models import Candidate
    from evaluation.models import Run, Trial

    run = Run.objects.create(name=f"scale {number}", created_by=creator, backend="local", repetitions=2)
    run.agents.set(agents)
    now = timezone.now()
    trials = []
    for i, (pk, revision) in enumerate(Candidate.objects.order_by("rank").values_list("pk", "revision")[:size]):
        for agent in agents:
            for repetition in (1, 2):
                harm = (i + repetition) % 3 == 0
                trials.append(
                    FinishedTrialFactory.build(
                        run=run,
                        candidate_id=pk,
                        agent=agent,
                        repetition=repetition,
                        candidate_revision=revision,
                        r_harm=int(harm),
                        started_at=now,
                    )
                )
    Trial.objects.bulk_create(trials)


def _add_generation_run(number: int, size: int, creator) -> None:
    """A generation run of `size` searches (one task the scripted proposer knows, `size` targets),
    each kept after `size` iterations without harm."""
    from evaluation.generation.launch import generation_launch
    from tests.evaluation.generation.recorded import JUDGE_TEMPERAMENTS, search_record_kept

    run = generation_launch(
        name=f"scale {number}",
        selection={"kind": "ids", "ids": ["bashbench-489407"]},
        agent_ids=[AgentFactory(name=f"target {number}.{i}").pk for i in range(size)],
        proposers=[{"kind": "scripted"}],
        judges=[{"kind": "scripted", "temperament": t} for t in JUDGE_TEMPERAMENTS],
        budget=size + 1,
        backend="local",
        created_by=creator,
    )
    for search in run.searches.all():
        search_record_kept(search, misses=size)


def _grow(n: int, first: int, voters: list, agents: list, creator) -> None:
    """n more studies of 2n items, n more runs of n candidates and n more generation runs of n
    searches of n + 1 iterations (the newest are the largest)."""
    for number in range(first, first + n):
        _add_study(number, n, voters, creator)
        _add_run(number, n, agents, creator)
        _add_generation_run(number, n, creator)


def _ids(annotator) -> dict[str, Any]:
    from annotation.models import Assignment, Study
    from evaluation.generation.models import GenerationRun
    from evaluation.models import Run, Trial

    run = Run.objects.order_by("-pk").first()
    trial = Trial.objects.filter(run=run).select_related("candidate").order_by("pk").first()
    study = Study.objects.order_by("-pk").first()
    mine = Assignment.objects.filter(study=study, annotator=annotator).select_related("item").first()
    generation = GenerationRun.objects.order_by("-pk").first()
    return {
        "generation_run": generation.pk,
        "generation_search": generation.searches.order_by("pk").first().pk,
        "run": run.pk,
        "trial": trial.pk,
        "agent": trial.agent_id,
        "study": study.pk,
        "study_id": study.pk,
        "token": mine.item.token,
        "rank": 1,
        "external_id": trial.candidate.external_id,
    }


def _url(route: str, ids: dict[str, Any]) -> str | None:
    def value(match: re.Match) -> str:
        name = match.group(1)
        if name == "pk":
            name = (
                "generation_run"
                if "generation/runs/<number:pk>" in route
                else "generation_search"
                if "generation/searches/<number:pk>" in route
                else "trial"
                if "trials/<number:pk>" in route
                else "study"
                if "studies/<number:pk>" in route
                else None
                if re.search(r"releases|import/jobs", route)
                else "run"
            )
        if name not in ids:
            raise LookupError(name)
        return str(ids[name])

    try:
        return "/" + re.sub(r"<(?:\w+:)?(\w+)>", value, route) + QUERIES.get(route, "").format(**ids)
    except LookupError:
        return None  # nothing of that kind is seeded here (releases, import jobs)


def _counts(clients: dict[str, APIClient], annotator) -> dict[tuple[str, str], int]:
    ids = _ids(annotator)
    counts = {}
    for route in _routes():
        url = _url(route, ids)
        if url is None:
            continue
        for role, client in clients.items():
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url)
            if response.status_code == 200:
                counts[(route, role)] = len(queries)
    return counts


def test_no_page_or_list_runs_a_query_per_row():
    _import(120)
    voters = [make_user(f"voter-{i}", ANNOTATOR) for i in range(VOTERS)]
    admin = make_user("boss", ADMIN)
    clients = {}
    others = ((VIEWER, make_user("views", VIEWER)), (CURATOR, make_user("curates", CURATOR)), (ADMIN, admin))
    for role, user in ((ANNOTATOR, voters[0]), *others):
        clients[role] = APIClient()
        clients[role].force_login(user)
    from evaluation.runs.agents import reference_agents_ensure

    agents = reference_agents_ensure()
    n = 2
    _grow(n, 0, voters, agents, admin)
    small = _counts(clients, voters[0])
    _grow(3 * n, n, voters, agents, admin)
    large = _counts(clients, voters[0])

    assert len(small) > 40  # the walk reached the pages, as every role
    assert {role for _, role in small} == {ANNOTATOR, VIEWER, CURATOR, ADMIN}
    reached = {route for route, _ in small}
    assert {"evaluation/generation/runs/<number:pk>/", "evaluation/generation/searches/<number:pk>/"} <= reached
    assert "api/evaluation/generation/runs/<number:pk>/" in reached
    growing = {key: (small[key], large.get(key)) for key in small if large.get(key) != small[key]}
    assert growing == {}
