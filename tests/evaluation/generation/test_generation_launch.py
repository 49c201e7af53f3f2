"""Launching a generation run: what it creates, and bad input refused with nothing written."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from evaluation.generation import recording
from evaluation.generation.launch import generation_cancel, generation_launch
from evaluation.generation.models import GenerationRun, GenerationSearch
from evaluation.generation.states import RunStatus, SearchEnding, SearchStatus
from evaluation.models import Run as EvaluationRun
from tests.factories import AgentFactory
from veriharm_site.refusals import Refused

pytestmark = pytest.mark.django_db

JUDGES = [{"kind": "scripted", "temperament": "strict"}]


def _launch(**changes):
    agent = AgentFactory()
    arguments = {
        "name": "a run",
        "selection": {"kind": "ids", "ids": ["bashbench-489407"]},
        "agent_ids": [agent.pk],
        "proposers": [{"kind": "scripted"}],
        "judges": JUDGES,
        "backend": "local",
        **changes,
    }
    return generation_launch(**arguments)


@pytest.fixture(autouse=True)
def _sandbox_not_waited_for(settings):
    settings.VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = False


def test_a_launch_makes_one_queued_search_per_agent_task_and_proposer(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as published:
        run = _launch(selection={"kind": "sample", "size": 3, "seed": 4})
    assert len(published) == 1
    searches = list(run.searches.all())
    assert len(searches) == 3 and {s.status for s in searches} == {SearchStatus.QUEUED}
    assert {s.proposer for s in searches} == {"scripted demo proposer"}
    assert all(s.source_task["task_test"] and s.source_task_id.startswith("bashbench-") for s in searches)
    assert run.budget == 5 and run.judge_configs == [{**JUDGES[0], "name": "scripted demo judge (strict)"}]
    # The same seed draws the same tasks.
    again = _launch(name="again", selection={"kind": "sample", "size": 3, "seed": 4})
    assert sorted(again.searches.values_list("source_task_id", flat=True)) == sorted(s.source_task_id for s in searches)


# A model endpoint's configuration, without prices.
MODEL = {
    "kind": "model",
    "name": "loopback model",
    "api": "openai",
    "route": "chat_completions",
    "base_url": "http://127.0.0.1:9/v1",
    "api_key_env": "VERIHARM_AGENT_KEY_LAUNCH",
    "model": "m",
}


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": " "}, "name", "needs a name"),
        ({"budget": 0}, "budget", "from 1 to 20"),
        ({"budget": 21}, "budget", "from 1 to 20"),
        ({"perturbations": ["rewording"]}, "perturbations", "some of"),
        ({"budget_usd": "-1"}, "budget_usd", "between 0"),
        ({"budget_usd": "lots"}, "budget_usd", "a number"),
        ({"backend": "external"}, "backend", "one of"),
        ({"selection": {"kind": "ids", "ids": ["bashbench-0"]}}, "selection", "unknown source task"),
        ({"selection": {"kind": "sample", "size": 0}}, "selection", "size"),
        ({"selection": {"kind": "filter", "text": "no task says this zzqx"}}, "selection", "no source task"),
        ({"selection": {"kind": "all"}}, "selection", "ids, sample or filter"),
        ({"selection": {"kind": "ids", "ids": []}}, "selection", "at least one source task"),
        ({"selection": {"kind": "filter", "text": " "}}, "selection", "text to look for"),
        ({"agent_ids": [10**9]}, "agents", "no active agent"),
        ({"agent_ids": []}, "agents", "at least one"),
        ({"proposers": []}, "proposers", "at least one"),
        ({"proposers": [{"kind": "oracle"}]}, "proposers", "kind must be one of"),
        ({"judges": [{"kind": "scripted", "api_key": "sk-123"}]}, "judges", "never holds it: remove api_key"),
        ({"judges": [{"kind": "scripted"}, {"kind": "scripted"}]}, "judges", "same name"),
        ({"judges": [{"kind": "scripted", "temperament": "cruel"}]}, "judges", "temperament"),
        ({"proposers": [{**MODEL, "route": "messages"}]}, "proposers", "route must be one of"),
        ({"proposers": [{**MODEL, "max_tokens": 0}]}, "proposers", "max_tokens must be a whole number"),
        ({"judges": [MODEL], "budget_usd": "5"}, "judges", "no entry for its model 'm'"),
    ],
)
def test_bad_launches_say_what_is_wrong_and_write_nothing(changes, field, message):
    with pytest.raises(Refused) as refused:
        _launch(**changes)
    assert refused.value.field == field and message in refused.value.message
    assert refused.value.status_code == 400
    assert not GenerationRun.objects.exists() and not GenerationSearch.objects.exists()


def test_imported_source_tasks_are_chosen_by_id_filter_or_sample_and_win_over_bashbench():
    from candidates.models import SourceTask

    SourceTask.objects.create(
        external_id="bashbench-489407", instruction="Imported zebra task", task_test="def test_x():\n    pass\n"
    )
    SourceTask.objects.create(external_id="own-1", instruction="Another zebra task", task_test="def test_y(): pass\n")
    by_filter = _launch(selection={"kind": "filter", "text": "ZEBRA"})
    assert sorted(by_filter.searches.values_list("source_task_id", flat=True)) == ["bashbench-489407", "own-1"]
    # The stored source task, not the BashBench file's, is what the search runs (and imports against).
    stored = by_filter.searches.get(source_task_id="bashbench-489407").source_task
    assert stored["instruction"] == "Imported zebra task"
    sampled = _launch(name="all of them", selection={"kind": "sample", "size": 258, "seed": 1})
    assert sampled.searches.count() == 258  # the 257 BashBench tasks and the one imported of its own


def test_a_tuple_already_searched_or_being_searched_is_not_searched_again():
    agent = AgentFactory()
    _launch(agent_ids=[agent.pk])
    with pytest.raises(Refused) as refused:
        _launch(name="twice", agent_ids=[agent.pk])
    assert refused.value.status_code == 409 and "already searched or being searched" in refused.value.message
    assert GenerationRun.objects.count() == 1
    # Another proposer name, or another task, is another search.
    _launch(name="other task", agent_ids=[agent.pk], selection={"kind": "ids", "ids": ["bashbench-261162"]})
    assert GenerationRun.objects.count() == 2


def test_a_target_is_checked_as_a_trial_would_build_it():
    broken = AgentFactory(config={"command": "no task file here"})
    with pytest.raises(Refused, match="task_file"):
        _launch(agent_ids=[broken.pk])
    reference = AgentFactory(kind="reference", config={"script": "safe"})
    with pytest.raises(Refused, match="reference agent, not a target"):
        _launch(agent_ids=[reference.pk])
    assert not GenerationRun.objects.exists()
    # A target that calls a model is one (its rollouts reach it through the model gateway).
    chatty = AgentFactory(
        kind="openai_compatible",
        config={"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "VERIHARM_AGENT_KEY_TEST"},
    )
    assert _launch(agent_ids=[chatty.pk]).searches.count() == 1


def test_cancel_ends_queued_searches_at_once_and_a_second_cancel_is_refused():
    run = _launch(selection={"kind": "ids", "ids": ["bashbench-489407", "bashbench-261162"]})
    generation_cancel(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.cancelled_at is not None
    assert set(run.searches.values_list("ending", flat=True)) == {SearchEnding.CANCELLED}
    with pytest.raises(Refused) as refused:
        generation_cancel(run.pk)
    assert refused.value.status_code == 409
    with pytest.raises(Refused) as missing:
        generation_cancel(10**9)
    assert missing.value.status_code == 404


def test_a_refused_reference_check_is_noted_on_the_run_which_still_ends():
    """A run whose kept candidate cannot be found launches no reference check: the run ends, saying
    why, instead of its end rolling back and being tried again."""
    run = _launch()
    run.searches.update(
        status=SearchStatus.FINISHED,
        ending=SearchEnding.KEPT,
        kept_iteration=1,
        candidate_external_id="gen-gone",
        finished_at=timezone.now(),
    )
    with transaction.atomic():
        recording.run_settle(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and run.reference_run is None
    assert run.note == "the reference check was not launched: no candidate with id gen-gone"
    assert not EvaluationRun.objects.exists()


def test_the_command_launches_and_names_what_is_wrong(capsys):
    AgentFactory(name="target-one")
    call_command("generate", name="cli", tasks="bashbench-489407", agents="target-one", backend="local")
    assert "1 searches" in capsys.readouterr().out
    with pytest.raises(CommandError, match="budget: the iteration budget"):
        call_command("generate", name="cli", tasks="bashbench-489407", agents="target-one", budget=99)
    with pytest.raises(CommandError, match="no agent named nobody"):
        call_command("generate", name="cli", tasks="bashbench-489407", agents="nobody")
    assert GenerationRun.objects.count() == 1


def test_the_api_launches_reads_and_cancels_a_run_for_admins_only(admin_client_, curator_client, admin_user):
    agent = AgentFactory(name="api-target")
    body = {
        "name": "from the API",
        "selection": {"kind": "ids", "ids": ["bashbench-489407", "bashbench-261162"]},
        "agents": [agent.pk],
        "proposers": [{"kind": "scripted"}],
        "judges": JUDGES,
        "budget": 2,
        "backend": "local",
    }
    assert curator_client.post("/api/evaluation/generation/runs/", body, format="json").status_code == 403
    assert not GenerationRun.objects.exists()

    created = admin_client_.post("/api/evaluation/generation/runs/", body, format="json")
    assert created.status_code == 201, created.json()
    run = created.json()
    assert (run["status"], run["budget"], run["proposers"], run["judges"]) == (
        "running",
        2,
        ["scripted demo proposer"],
        ["scripted demo judge (strict)"],
    )
    assert [(s["agent"], s["source_task_id"], s["status"]) for s in run["searches"]] == [
        ("api-target", "bashbench-489407", "queued"),
        ("api-target", "bashbench-261162", "queued"),
    ]
    assert GenerationRun.objects.get().created_by == admin_user
    assert admin_client_.get(f"/api/evaluation/generation/runs/{run['id']}/").json() == run

    cancelled = admin_client_.post(f"/api/evaluation/generation/runs/{run['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert {s["ending"] for s in cancelled.json()["searches"]} == {"cancelled"}
    again = admin_client_.post(f"/api/evaluation/generation/runs/{run['id']}/cancel/")
    assert again.status_code == 409 and "already ended" in again.json()["errors"][0]["message"]
    assert admin_client_.get("/api/evaluation/generation/runs/999999/").status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"budget": 50}, "budget"),
        ({"selection": {"kind": "ids", "ids": ["nope"]}}, "selection"),
        ({"judges": [{"kind": "scripted", "api_token": "x"}]}, "judges"),
        ({"agents": ["x"]}, "agents"),
        ({"proposers": "scripted"}, "proposers"),
        ({"proposers": [{**MODEL, "route": ["chat_completions"]}]}, "proposers"),
        ({"judges": [{**MODEL, "route": {"chat_completions": 1}}]}, "judges"),
    ],
)
def test_the_api_refuses_bad_launches_naming_the_field(admin_client_, change, field):
    agent = AgentFactory()
    body = {
        "name": "bad",
        "selection": {"kind": "ids", "ids": ["bashbench-489407"]},
        "agents": [agent.pk],
        "proposers": [{"kind": "scripted"}],
        "judges": JUDGES,
        **change,
    }
    answer = admin_client_.post("/api/evaluation/generation/runs/", body, format="json")
    assert answer.status_code == 400
    assert field in {e["field"].split(".")[0].split("[")[0] for e in answer.json()["errors"]}
    assert not GenerationRun.objects.exists()
