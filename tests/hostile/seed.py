"""One database with an object of every kind the API addresses, for the hostile-input suites."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.db import connection

from annotation.labelling import services as labelling_services
from annotation.studies import services as study_services
from candidates.models import Candidate
from candidates.releases.services import release_create
from candidates.services import candidate_import_files
from evaluation.generation.launch import generation_launch
from evaluation.generation.models import GenerationStep
from evaluation.generation.states import StepKind
from evaluation.models import Agent, AgentKind, Run
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_launch
from tests.annotation.conftest import import_pool
from tests.conftest import EXAMPLES, make_user
from veriharm_site.roles import ADMIN, ANNOTATOR, CURATOR, VIEWER

USERS = {
    "annotator": ("ann", ANNOTATOR),
    "viewer": ("view", VIEWER),
    "curator": ("cur", CURATOR),
    "admin": ("adm", ADMIN),
}


@dataclass
class Seeded:
    candidate: str
    study: int
    token: str
    release: int
    run: int
    trial: int
    agent: int
    users: dict
    generation_run: int = 0
    generation_search: int = 0


def seed() -> Seeded:
    users = {role: make_user(name, group) for role, (name, group) in USERS.items()}
    candidate_import_files([str(EXAMPLES / "candidates.jsonl"), str(EXAMPLES / "search.jsonl")])
    import_pool(12, task_indices=list(range(12)))  # fixed tasks: none conflicts with the examples
    study = study_services.study_create(
        study_services.StudySpec(name="hostile study", seed=7, top_k=4, per_group=2, annotators_per_item=1),
        annotators=[users["annotator"]],
        created_by=users["curator"],
    )
    assignment = labelling_services.item_claim_next(study.pk, users["annotator"])
    release = release_create(user=users["curator"], name="hostile", version="1.0", description="draft")
    agents = reference_agents_ensure()
    candidate = Candidate.objects.order_by("rank").first()
    run = run_launch(
        selection={"kind": "ids", "ids": [candidate.external_id]},
        agent_ids=[a.pk for a in agents],
        backend="local",
        created_by=users["admin"],
        name="hostile run",
    )
    run = Run.objects.get(pk=run.pk)
    target = Agent.objects.create(name="hostile-target", kind=AgentKind.COMMAND, config={"command": "true {task_file}"})
    generation = generation_launch(
        name="hostile generation",
        selection={"kind": "ids", "ids": ["bashbench-489407"]},
        agent_ids=[target.pk],
        proposers=[{"kind": "scripted"}],
        judges=[{"kind": "scripted"}],
        backend="local",
        created_by=users["admin"],
    )
    search = generation.searches.order_by("pk").first()
    # A first proposal, so the pages and texts of a search's iterations have one to show.
    GenerationStep.objects.create(
        search=search,
        kind=StepKind.PROPOSAL,
        iteration=1,
        instruction="Rotate the logs.",
        harm_test="def test_x(): pass",
    )
    return Seeded(
        candidate=candidate.external_id,
        study=study.pk,
        token=assignment.item.token,
        release=release.pk,
        run=run.pk,
        trial=run.trials.order_by("pk").first().pk,
        agent=agents[0].pk,
        users=users,
        generation_run=generation.pk,
        generation_search=search.pk,
    )


@cache
def _counting_query() -> tuple[list[str], str]:
    # The tables are those of the migrations, the same for every test of the session: looked up once
    # (the walks count rows after thousands of requests).
    with connection.cursor() as cursor:
        tables = [t for t in connection.introspection.table_names(cursor) if not t.startswith("django_migrations")]
    return tables, "SELECT " + ", ".join(f"(SELECT count(*) FROM {connection.ops.quote_name(t)})" for t in tables)


def table_counts() -> dict[str, int]:
    """Rows in every table of the database, in one query."""
    tables, query = _counting_query()
    with connection.cursor() as cursor:
        cursor.execute(query)
        return dict(zip(tables, cursor.fetchone()))
