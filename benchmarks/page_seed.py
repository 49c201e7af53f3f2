"""The data `page_bench.py` walks: candidates through the pipeline import, studies with every vote,
finished runs of trials, searches, a curator's decisions and generation runs, at the sizes below."""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

STUDIES, ITEMS_PER_STUDY, VOTERS = 10, 50, 3
RUNS, RUN_CANDIDATES, RUN_REPETITIONS = 10, 150, 4
# A generation run of thousands of searches (budget 5), and one search of the longest shape a
# proposer may produce: 20 iterations of 80,000-character proposals.
GENERATION_SEARCHES, GENERATION_BUDGET = 5_000, 5
LONG_ITERATIONS, LONG_CHARS = 20, 80_000


def _seed_candidates(n: int) -> None:
    from candidates.services import candidate_import_files
    from demo import generated as demo

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pool.jsonl"
        demo.write_jsonl(demo.synthetic_candidates(demo.load_bashbench(), n), path)
        candidate_import_files([str(path)])


def seed_users() -> dict[str, Any]:
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


def seed_generation(users: dict[str, Any]) -> None:
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


def seed(candidates: int) -> None:
    from django.db import connection

    t0 = time.perf_counter()
    _seed_candidates(candidates)
    print(f"  {candidates:,} candidates imported in {time.perf_counter() - t0:.0f} s", flush=True)
    users = seed_users()
    t1 = time.perf_counter()
    _seed_studies(users)
    _seed_runs(users)
    _seed_searches(candidates)
    _seed_decisions(users)
    seed_generation(users)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(f"  studies, votes and runs seeded in {time.perf_counter() - t1:.0f} s", flush=True)
