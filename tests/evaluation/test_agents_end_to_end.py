"""Agents through a real Celery worker and the real local sandbox: the OpenAI-compatible loop against a
loopback server, cancelling a running trial, and the evaluate command."""

from __future__ import annotations

import json
import os

import pytest
from django.core.management import call_command

from candidates.models import Candidate
from evaluation.models import Agent, AgentKind, Run, Trial, TrialStatus
from evaluation.runs.agents import reference_agents_ensure
from evaluation.runs.launch import run_cancel, run_launch
from evaluation.sandbox.bubblewrap.orphans import default_state_dir
from evaluation.sandbox.registry import shared_backends
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_for_run, wait_until

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"


def openai_agent(name: str, base_url: str, **config) -> Agent:
    return Agent.objects.create(
        name=name,
        kind=AgentKind.OPENAI_COMPATIBLE,
        model="scripted-1",
        harness="veriharm bash-tool loop",
        config={"base_url": base_url, "model": "scripted-1", "api_key_env": "VERIHARM_AGENT_KEY_TEST_CHAT", **config},
        time_limit=120,
    )


@pytest.mark.django_db(transaction=True)
def test_openai_compatible_agent_solves_a_candidate_in_the_sandbox(
    sandboxes_ready, examples_imported, celery_worker_thread, monkeypatch
):
    monkeypatch.setenv("VERIHARM_AGENT_KEY_TEST_CHAT", "sk-local-test")
    candidate = Candidate.objects.get(external_id=SAFE_ID)
    chat = ScriptedChat([], api_key="sk-local-test")
    with chat_server(chat):
        port = chat.base_url.split(":")[2].split("/")[0]
        # The sandbox can neither reach the model endpoint on the host's loopback nor read the key.
        probe = (
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\" "
            "&& echo endpoint=reachable || echo endpoint=unreachable; echo key=${VERIHARM_AGENT_KEY_TEST_CHAT:-none}"
        )
        chat.turns = [
            [candidate.references["harmful"]],
            ["ls -l solution.sh", probe],
            "Done: solution.sh adjusts mtimes.",
        ]
        agent = openai_agent("scripted", chat.base_url, temperature=0.3, max_steps=8)
        run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
        progress = wait_for_run(run, timeout=120)
    assert progress["done"] == 1, progress
    trial = Trial.objects.get(run=run)
    assert (trial.r_task, trial.r_harm) == (1, 1) and trial.agent_exit_code == 0
    steps = list(trial.steps.order_by("index"))
    assert [s.kind for s in steps] == ["message", "command", "message", "command", "command", "message"]
    assert "-rwxrwxrwx" in steps[3].content  # the command really ran in the sandbox
    assert "endpoint=unreachable" in steps[4].content and "key=none" in steps[4].content
    assert steps[-1].content == "Done: solution.sh adjusts mtimes."
    # The model saw the task t~ and nothing of the tests.
    request_text = json.dumps(chat.requests)
    assert candidate.instruction[:60].replace("\n", "\\n") in request_text
    assert candidate.harm_test[:30] not in request_text and "test_" not in request_text.replace("tool_c", "")
    assert chat.requests[0]["temperature"] == 0.3 and chat.headers[0]["Authorization"] == "Bearer sk-local-test"


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_running_trial_and_leaves_no_sandbox(sandboxes_ready, examples_imported, celery_worker_thread):
    chat = ScriptedChat([["sleep 1"]] * 60)
    with chat_server(chat):
        agent = openai_agent("sleepy", chat.base_url, max_steps=60, api_key_env="")
        run = run_launch(
            selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local", repetitions=2
        )
        wait_until(lambda: Trial.objects.filter(run=run, steps__kind="command").exists(), 60, "the first command")
        run_cancel(run)
        progress = wait_for_run(run, timeout=60)
    assert progress["status"] == "cancelled" and progress["cancelled"] == 2 and progress["done"] == 0
    assert set(Trial.objects.filter(run=run).values_list("status", flat=True)) == {TrialStatus.CANCELLED}
    assert len(chat.requests) < 10
    # What this process's warm pools hold ready was never handed to a trial.
    pooled = {s.directory for backend in shared_backends() if backend.name == "local" for s in backend.pooled()}  # type: ignore[attr-defined]
    mine = [
        d
        for d in default_state_dir().glob("*")
        if (d / "meta.json").exists()
        and json.loads((d / "meta.json").read_text()).get("owner_pid") == os.getpid()
        and d not in pooled
    ]
    assert mine == []


@pytest.mark.django_db(transaction=True)
def test_evaluate_command_launches_waits_and_reruns(sandboxes_ready, examples_imported, celery_worker_thread, capsys):
    reference_agents_ensure()
    call_command(
        "evaluate", "--agent", "reference-harmful", "--ids", SAFE_ID, "--backend", "local", "--wait", "--timeout", "120"
    )
    out = capsys.readouterr().out
    run = Run.objects.get()
    assert f"Launched {run}" in out and "finished: 1 done" in out
    assert "reference-harmful" in out and ",all,," in out  # the metrics, as CSV
    assert Trial.objects.get(run=run).r_harm == 1
    call_command("evaluate", "--rerun", str(run.pk), "--wait", "--timeout", "120")
    rerun = Run.objects.exclude(pk=run.pk).get()
    assert rerun.rerun_of == run and Trial.objects.get(run=rerun).status == TrialStatus.DONE
    assert Trial.objects.filter(candidate__external_id=SAFE_ID).count() == 2  # history kept
    with pytest.raises(Exception, match="no agent named ghost"):
        call_command("evaluate", "--agent", "ghost", "--top-k", "3")
