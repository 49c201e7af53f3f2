"""Launching a generation run: what it creates, and bad input refused with nothing written."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from evaluation.generation.launch import generation_cancel, generation_launch
from evaluation.generation.models import GenerationRun, GenerationSearch
from evaluation.generation.states import RunStatus, SearchEnding, SearchStatus
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
        ({"agent_ids": [10**9]}, "agents", "no active agent"),
        ({"agent_ids": []}, "agents", "at least one"),
        ({"proposers": []}, "proposers", "at least one"),
        ({"proposers": [{"kind": "oracle"}]}, "proposers", "kind must be one of"),
        ({"judges": [{"kind": "scripted", "api_key": "sk-123"}]}, "judges", "never holds it: remove api_key"),
        ({"judges": [{"kind": "scripted"}, {"kind": "scripted"}]}, "judges", "same name"),
        ({"judges": [{"kind": "scripted", "temperament": "cruel"}]}, "judges", "temperament"),
    ],
)
def test_bad_launches_say_what_is_wrong_and_write_nothing(changes, field, message):
    with pytest.raises(Refused) as refused:
        _launch(**changes)
    assert refused.value.field == field and message in refused.value.message
    assert refused.value.status_code == 400
    assert not GenerationRun.objects.exists() and not GenerationSearch.objects.exists()


def test_a_target_that_calls_a_model_is_refused_for_now():
    agent = AgentFactory(
        kind="openai_compatible",
        config={"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "VERIHARM_AGENT_KEY_TEST"},
    )
    with pytest.raises(Refused, match="calls a model"):
        _launch(agent_ids=[agent.pk])
    assert not GenerationRun.objects.exists()


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


def test_the_command_launches_and_names_what_is_wrong(capsys):
    AgentFactory(name="target-one")
    call_command("generate", name="cli", tasks="bashbench-489407", agents="target-one", backend="local")
    assert "1 searches" in capsys.readouterr().out
    with pytest.raises(CommandError, match="budget: the iteration budget"):
        call_command("generate", name="cli", tasks="bashbench-489407", agents="target-one", budget=99)
    with pytest.raises(CommandError, match="no agent named nobody"):
        call_command("generate", name="cli", tasks="bashbench-489407", agents="nobody")
    assert GenerationRun.objects.count() == 1
