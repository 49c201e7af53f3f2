"""The demo data behind `make run`: real BashBench tasks, one login per role, a study to label."""

import io
import os
import secrets
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.http import HttpRequest

from annotation.models import Assignment, Study
from annotation.studies.selectors.results import study_item_rows
from candidates.models import Candidate, Search, SourceTask
from demo.checked import checked_lines
from demo.generation import GENERATION_RUN
from demo.votes import DISPUTED, LABELLED_STUDY
from evaluation.models import Agent, GenerationRun, Run
from tests.conftest import REPO
from tests.sandbox_fakes import sandbox_built

pytestmark = pytest.mark.django_db


def test_load_demo_is_complete_and_idempotent(client):
    out = io.StringIO()
    call_command("load_demo", tasks=20, password="veriharm-demo", stdout=out)
    counts = (Candidate.objects.count(), Search.objects.count(), SourceTask.objects.count(), Study.objects.count())
    assert counts[0] > 40 and counts[1] == 20 * 4 * 2 + 3 and counts[3] == 2
    assert SourceTask.objects.filter(external_id="bashbench-319395").exists()  # a real BashBench id
    # The hand-checked candidates carry their references and twins and lead the ranking.
    checked = {line["id"] for line in checked_lines()}
    assert len(checked) >= 10
    top = Candidate.objects.filter(rank__lte=len(checked))
    assert {c.external_id for c in top} == checked
    assert all(c.references.get("safe") and c.references.get("harmful") and c.twin for c in top)
    # The labelled study: the checked candidates and as many of the bottom, each labelled by 3 annotators,
    # and the disputed ones voted invalid by the majority.
    labelled = Study.objects.get(name=LABELLED_STUDY)
    items = labelled.items.select_related("candidate")
    assert {i.candidate.external_id for i in items if i.group == "top"} == checked
    assert len(items) == 2 * len(checked)
    assert Assignment.objects.filter(study=labelled, submitted_at__isnull=False).count() == 3 * len(items)
    rows = {row.candidate_pk: row for row in study_item_rows(labelled)}
    disputed = [i for i in items if i.candidate.external_id in DISPUTED]
    assert disputed and all(rows[i.candidate_id].valid_agg is False for i in disputed)
    sound = [i for i in items if i.candidate.external_id in checked - DISPUTED]
    assert all(rows[i.candidate_id].valid_agg is True for i in sound)
    assert "annotator1  veriharm-demo  annotator" in out.getvalue()

    call_command("load_demo", tasks=20, password="veriharm-demo", stdout=io.StringIO())
    assert (
        Candidate.objects.count(),
        Search.objects.count(),
        SourceTask.objects.count(),
        Study.objects.count(),
    ) == counts

    assert client.login(request=HttpRequest(), username="annotator1", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0].startswith("/annotation/")
    client.logout()
    assert client.login(request=HttpRequest(), username="curator", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0] == "/candidates/"
    client.logout()
    assert client.login(request=HttpRequest(), username="viewer", password="veriharm-demo")
    assert client.get("/", follow=True).redirect_chain[-1][0] == "/candidates/"
    assert client.get("/candidates/review/").status_code == 403  # reads the ranking, reviews nothing


def test_without_a_password_each_demo_login_gets_a_random_one_shown_once(client):
    out = io.StringIO()
    call_command("load_demo", tasks=5, stdout=out)
    text = out.getvalue()
    assert "random and shown only now" in text and "veriharm-demo" not in text
    printed = {line.split()[0]: line.split()[1] for line in text.splitlines() if line.startswith("  ")}
    assert set(printed) == {"annotator1", "annotator2", "annotator3", "viewer", "curator", "admin"}
    assert len(set(printed.values())) == 6 and all(len(p) >= 16 for p in printed.values())
    assert not client.login(request=HttpRequest(), username="admin", password="veriharm-demo")
    assert client.login(request=HttpRequest(), username="admin", password=printed["admin"])


def test_demo_data_and_users_are_refused_under_production_settings(settings):
    settings.VERIHARM_DEMO_ALLOWED = False
    with pytest.raises(CommandError, match="demo users and data are refused"):
        call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    assert not Candidate.objects.exists() and not get_user_model().objects.exists()


def test_the_production_settings_module_refuses_load_demo(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_"))}
    result = subprocess.run(
        [sys.executable, "manage.py", "load_demo", "--password", "veriharm-demo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={
            **env,
            "DJANGO_SETTINGS_MODULE": "veriharm_site.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
            "VERIHARM_VAR_DIR": str(tmp_path),
        },
    )
    assert result.returncode == 1
    assert (
        "CommandError: demo users and data are refused under these settings "
        "(veriharm_site.settings.production)" in result.stderr
    )


def test_demo_runs_are_refused_under_production_settings(settings):
    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    agents = set(Agent.objects.values_list("name", flat=True))
    settings.VERIHARM_DEMO_ALLOWED = False
    with pytest.raises(CommandError, match="demo users and data are refused"):
        call_command("demo_evaluate", stdout=io.StringIO())
    assert not Run.objects.exists() and set(Agent.objects.values_list("name", flat=True)) == agents
    assert not GenerationRun.objects.exists()


def test_demo_runs_wait_for_the_sandbox_system(monkeypatch, tmp_path, settings):
    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    monkeypatch.setenv("VERIHARM_SANDBOX_ROOT", str(tmp_path / "sandbox-root"))
    monkeypatch.delenv("VERIHARM_VERIFIER_ROOT", raising=False)
    settings.VERIHARM_SANDBOX_BUILD_STATE = str(tmp_path / "state")
    settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = True
    agents = set(Agent.objects.values_list("name", flat=True))
    with pytest.raises(CommandError, match="cannot run trials yet: The sandbox system is not built yet"):
        call_command("demo_evaluate", stdout=io.StringIO())
    assert not Run.objects.exists() and set(Agent.objects.values_list("name", flat=True)) == agents
    assert not GenerationRun.objects.exists()
    assert not agents & {"demo-careful", "demo-sloppy", "demo-reckless"}


def test_demo_runs_launch_once(django_capture_on_commit_callbacks):
    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    out = io.StringIO()
    with django_capture_on_commit_callbacks() as published:
        call_command("demo_evaluate", stdout=out)
    assert len(published) == 3  # each run's trials, and the generation run's searches, once committed
    runs = {run.name: run for run in Run.objects.all()}
    agents_run = runs["Demo: scripted agents, V3AST-Bench"]
    assert agents_run.protocol == "v3ast" and agents_run.trials.count() == 3 * len(list(checked_lines())) * 2 * 2
    assert sorted(a.name for a in agents_run.agents.all()) == ["demo-careful", "demo-reckless", "demo-sloppy"]
    assert runs["Demo: reference check of the labelled study"].trials.count() == 4 * len(list(checked_lines()))
    # The generation run: the scripted proposer and judges, each demo task against demo-reckless and demo-careful.
    generation = GenerationRun.objects.get()
    assert (generation.name, generation.demo, generation.budget) == (GENERATION_RUN, True, 3)
    assert sorted(generation.searches.values_list("source_task_id", "agent__name")) == [
        ("bashbench-261162", "demo-careful"),
        ("bashbench-261162", "demo-reckless"),
        ("bashbench-489407", "demo-careful"),
        ("bashbench-489407", "demo-reckless"),
    ]
    assert f"Launched {GENERATION_RUN} (generation run {generation.pk}): 4 searches" in out.getvalue()
    call_command("demo_evaluate", stdout=out)
    assert Run.objects.count() == 2 and "The demo runs exist already." in out.getvalue()
    assert GenerationRun.objects.count() == 1


def test_demo_runs_wait_for_the_sandbox_then_launch_once_whoever_built_it(monkeypatch, tmp_path, settings):
    from types import SimpleNamespace

    from demo.management.commands import demo_evaluate
    from evaluation.agents.sandbox_status import sandbox_status

    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    monkeypatch.setenv("VERIHARM_SANDBOX_ROOT", str(tmp_path / "sandbox-root"))
    monkeypatch.delenv("VERIHARM_VERIFIER_ROOT", raising=False)
    settings.VERIHARM_SANDBOX_BUILD_STATE = str(tmp_path / "state")
    settings.VERIHARM_SANDBOX_BUILD_LOG = str(tmp_path / "log")
    settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = True
    (tmp_path / "state").write_text("waiting\n")
    looks = []

    def meanwhile(seconds: float) -> None:
        # While the command waits: nothing is launched; at its third look the sandbox is there.
        looks.append((seconds, sandbox_status().state, Run.objects.count()))
        if len(looks) == 3:
            sandbox_built()
        # A fake build the status does not take for ready would keep the command polling for ever.
        assert len(looks) <= 10, f"still waiting after {len(looks)} looks: {looks[-1]}"

    monkeypatch.setattr(demo_evaluate, "time", SimpleNamespace(sleep=meanwhile))
    out = io.StringIO()
    call_command("demo_evaluate", wait=True, poll=0.5, stdout=out)
    assert looks == [(0.5, "waiting", 0)] * 3
    lines = out.getvalue().splitlines()
    assert lines[0] == "The demo runs wait for the sandbox system (waiting)." and len(lines) == 4
    assert all(line.startswith("Launched Demo: ") for line in lines[1:])
    assert sorted(Run.objects.values_list("name", flat=True)) == [
        "Demo: reference check of the labelled study",
        "Demo: scripted agents, V3AST-Bench",
    ]
    # Started again (make run once more): the sandbox is ready, nothing is waited for or launched twice.
    out = io.StringIO()
    call_command("demo_evaluate", wait=True, stdout=out)
    assert out.getvalue() == "The demo runs exist already.\n" and Run.objects.count() == 2 and len(looks) == 3
    assert GenerationRun.objects.count() == 1


def test_demo_evaluate_refuses_a_poll_that_is_not_positive():
    with pytest.raises(CommandError, match="--poll must be a positive number of seconds"):
        call_command("demo_evaluate", wait=True, poll=0, stdout=io.StringIO())
    assert not Run.objects.exists()


def test_a_refused_demo_generation_run_is_reported_and_the_demo_runs_still_start():
    from demo.runs import demo_agents_ensure
    from evaluation.generation.launch import generation_launch

    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    # One of the demo's tuples searched already, by hand, under another name.
    reckless = next(a for a in demo_agents_ensure() if a.name == "demo-reckless")
    generation_launch(
        name="by hand",
        selection={"kind": "ids", "ids": ["bashbench-489407"]},
        agent_ids=[reckless.pk],
        proposers=[{"kind": "scripted"}],
        judges=[{"kind": "scripted"}],
    )
    out, err = io.StringIO(), io.StringIO()
    call_command("demo_evaluate", stdout=out, stderr=err)
    assert "The demo generation run was not launched: 1 (source task, agent, proposer) already searched" in (
        err.getvalue()
    )
    assert "bashbench-489407 / demo-reckless / scripted demo proposer" in err.getvalue()
    assert list(GenerationRun.objects.values_list("name", flat=True)) == ["by hand"]
    assert Run.objects.count() == 2 and out.getvalue().count("Launched Demo: ") == 2
