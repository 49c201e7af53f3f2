"""The model gateway through a real Celery worker: the chat loop's calls recorded and shown, and a run's
budget stopping its trials; launching with a budget.

The sandbox is the in-memory one of the protocol tests (its commands answer as a shell would): what is
under test is the way from the loop through the gateway to the upstream and into the records, which
no sandbox takes part in. The real backends' end-to-end tests are test_agents_end_to_end.py.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from evaluation.models import Agent, AgentKind, ModelCall, NetworkMode, Run, Trial, TrialStatus
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.launch import run_launch
from evaluation.trials import execution
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_for_run
from tests.evaluation.fake_sandbox import FakeBackend, ok

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
KEY_ENV = "VERIHARM_AGENT_KEY_E2E"
REAL_KEY = "sk-e2e-real-key-42"
# 1000 input tokens at 3 USD and 200 output tokens at 15 USD per million: 0.006 USD a call.
PRICES = {"scripted-1": {"input": 3, "output": 15}}


def priced_agent(name: str, base_url: str, **config) -> Agent:
    return Agent.objects.create(
        name=name,
        kind=AgentKind.OPENAI_COMPATIBLE,
        model="scripted-1",
        harness="veriharm bash-tool loop",
        config={"base_url": base_url, "model": "scripted-1", "api_key_env": KEY_ENV, "prices": PRICES, **config},
        time_limit=120,
    )


@pytest.fixture
def memory_sandboxes(monkeypatch):
    """The worker's trials run in in-memory sandboxes where every command (and both tests) exits 0."""
    commands: list[str] = []

    def shell(sandbox, command: str):
        commands.append(command)
        return ok("solution.sh")

    monkeypatch.setattr(execution, "default_backend_factory", lambda name: FakeBackend(shell))
    return commands


def page(admin_user, url: str) -> str:
    browser = Client()
    browser.force_login(admin_user)
    answer = browser.get(url)
    assert answer.status_code == 200
    return answer.content.decode()


@pytest.mark.django_db(transaction=True)
def test_chat_loop_calls_go_through_the_gateway_and_show_on_pages_and_api(
    memory_sandboxes, examples_imported, celery_worker_thread, monkeypatch, admin_user, admin_client_
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    chat = ScriptedChat([["ls"], "Done."], api_key=REAL_KEY, usage=(1000, 200))
    with chat_server(chat):
        agent = priced_agent("priced", chat.base_url)
        run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
        progress = wait_for_run(run, timeout=120)
    trial = Trial.objects.get(run=run)
    assert progress["done"] == 1, (progress, trial.error)
    assert [s.kind for s in trial.steps.order_by("index")] == ["message", "command", "message"]
    assert memory_sandboxes[0] == "ls" and (trial.r_task, trial.r_harm) == (1, 1)
    assert [h["Authorization"] for h in chat.headers] == [f"Bearer {REAL_KEY}"] * 2
    calls = list(ModelCall.objects.filter(trial=trial))
    assert [(c.attempt, c.route, c.input_tokens, c.output_tokens, c.cost_usd) for c in calls] == [
        (1, "chat_completions", 1000, 200, Decimal("0.006"))
    ] * 2

    run_page = page(admin_user, f"/evaluation/runs/{run.pk}/")
    assert "2000 input / 400 output tokens" in run_page and "$0.0120" in run_page and "no budget" in run_page
    assert 'data-agent="priced"' in run_page and "2000 / 400" in run_page  # per agent and per trial
    trial_page = page(admin_user, f"/evaluation/trials/{trial.pk}/")
    assert "Model calls" in trial_page and "2000 input / 400 output tokens" in trial_page and "$0.0120" in trial_page

    usage = admin_client_.get(f"/api/evaluation/runs/{run.pk}/").json()["model_usage"]
    assert (usage["calls"], usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (
        2,
        2000,
        400,
        "0.01200000",
    )
    assert usage["budget_usd"] is None and usage["by_agent"][0]["agent"] == "priced"
    assert usage["by_agent"][0]["cost_usd"] == "0.01200000"
    listed = admin_client_.get(f"/api/evaluation/runs/{run.pk}/trials/").json()["results"][0]["model_usage"]
    assert (listed["calls"], listed["cost_usd"]) == (2, "0.01200000")
    detail = admin_client_.get(f"/api/evaluation/trials/{trial.pk}/").json()
    assert [c["output_tokens"] for c in detail["model_calls"]] == [200, 200]
    assert detail["model_usage"]["input_tokens"] == 2000


@pytest.mark.django_db(transaction=True)
def test_a_spent_budget_stops_the_runs_trials_as_stopped_by_budget(
    memory_sandboxes, examples_imported, celery_worker_thread, monkeypatch, admin_user, admin_client_
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    chat = ScriptedChat([["ls"]] * 10, api_key=REAL_KEY, usage=(1000, 200))
    with chat_server(chat):
        agent = priced_agent("budgeted", chat.base_url, max_steps=10)
        # Less than one call: the first call is let through (nothing was spent), the next is refused.
        run = run_launch(
            selection={"kind": "ids", "ids": [SAFE_ID]},
            agent_ids=[agent.pk],
            backend="local",
            repetitions=2,
            budget_usd="0.005",
        )
        progress = wait_for_run(run, timeout=120)
    assert progress["unresolved"] == 2 and progress["ends"][TrialEnd.BUDGET] == 2, progress
    assert progress["ends"][TrialEnd.AGENT_ERROR] == 0 and progress["ends"][TrialEnd.INFRASTRUCTURE] == 0
    first, second = Trial.objects.filter(run=run).order_by("started_at")
    assert first.status == second.status == TrialStatus.UNRESOLVED and first.attempts == 1
    assert "stopped by budget" in first.error and "is spent" in first.error
    assert "not started" in second.error and not second.steps.exists()
    assert len(chat.requests) == 1 and ModelCall.objects.filter(trial__run=run).count() == 1

    run_page = page(admin_user, f"/evaluation/runs/{run.pk}/")
    assert 'budget <b data-testid="run-budget">$0.0050</b>' in run_page and "spent: the gateway refuses" in run_page
    assert f'data-end="{TrialEnd.BUDGET}">2<' in run_page
    assert "Stopped by budget" in page(admin_user, f"/evaluation/trials/{first.pk}/")
    usage = admin_client_.get(f"/api/evaluation/runs/{run.pk}/").json()
    assert usage["budget_usd"] == "0.0050" and usage["model_usage"]["budget_spent"] is True
    assert usage["model_usage"]["cost_usd"] == "0.00600000"


@pytest.mark.django_db(transaction=True)
def test_launching_with_a_budget_checks_it_and_the_agents_prices(examples_imported, admin_client_, admin_user):
    priced = priced_agent("priced-launch", "http://127.0.0.1:9/v1")
    unpriced = Agent.objects.create(
        name="unpriced",
        kind=AgentKind.OPENAI_COMPATIBLE,
        model="x",
        config={"base_url": "http://127.0.0.1:9/v1", "model": "x"},
    )
    launch = {"selection": {"kind": "ids", "ids": [SAFE_ID]}, "backend": "local"}
    for agents, budget, message in [
        (["priced-launch"], "-1", "budget_usd"),
        (["priced-launch"], "lots", "budget_usd"),
        (["unpriced"], "5", "agent unpriced has no price for x"),
    ]:
        answer = admin_client_.post(
            "/api/evaluation/runs/", {**launch, "agents": agents, "budget_usd": budget}, format="json"
        )
        assert answer.status_code == 400 and message in " ".join(
            f"{e['field']}: {e['message']}" for e in answer.json()["errors"]
        ), answer.json()
    browser = Client()
    browser.force_login(admin_user)
    form = {"selection_kind": "ids", "ids": SAFE_ID, "agents": [priced.pk], "backend": "local", "protocol": "veriharm"}
    answer = browser.post("/evaluation/launch/", {**form, "budget_usd": "-1"})
    assert answer.status_code == 400 and "greater than or equal to 0" in answer.content.decode()
    answer = browser.post("/evaluation/launch/", {**form, "agents": [unpriced.pk], "budget_usd": "3"})
    assert answer.status_code == 400 and "agent unpriced has no price for x" in answer.content.decode()
    with pytest.raises(CommandError, match="budget_usd must be"):
        call_command("evaluate", "--agent", "priced-launch", "--ids", SAFE_ID, "--budget", "100000000")
    assert not Run.objects.exists()
    answer = admin_client_.post(
        "/api/evaluation/runs/", {**launch, "agents": ["priced-launch"], "budget_usd": "2.5"}, format="json"
    )
    assert answer.status_code == 201 and answer.json()["budget_usd"] == "2.5000"
    assert Run.objects.get().budget_usd == Decimal("2.5")
    assert browser.post("/evaluation/launch/", {**form, "budget_usd": "0.75"}).status_code == 302
    assert Run.objects.order_by("-pk").first().budget_usd == Decimal("0.75")
    call_command("evaluate", "--agent", "priced-launch", "--ids", SAFE_ID, "--budget", "1.25")
    assert Run.objects.order_by("-pk").first().budget_usd == Decimal("1.25")
    # Zero is a budget too, on every way in, as for a generation run: the run may call no model.
    assert browser.post("/evaluation/launch/", {**form, "budget_usd": "0"}).status_code == 302
    answer = admin_client_.post(
        "/api/evaluation/runs/", {**launch, "agents": ["priced-launch"], "budget_usd": "0"}, format="json"
    )
    assert answer.status_code == 201 and answer.json()["budget_usd"] == "0.0000"
    call_command("evaluate", "--agent", "priced-launch", "--ids", SAFE_ID, "--budget", "0")
    assert list(Run.objects.order_by("-pk").values_list("budget_usd", flat=True)[:3]) == [Decimal(0)] * 3


@pytest.mark.django_db(transaction=True)
def test_a_trial_whose_calls_the_gateway_itself_failed_ends_as_infrastructure(
    memory_sandboxes, examples_imported, celery_worker_thread, monkeypatch, admin_user
):
    # The worker lacks the key the agent's configuration names: the gateway, not the model, fails.
    monkeypatch.delenv(KEY_ENV, raising=False)
    chat = ScriptedChat([["ls"], "Done."], api_key=REAL_KEY)
    with chat_server(chat):
        agent = priced_agent("keyless", chat.base_url)
        run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
        progress = wait_for_run(run, timeout=120)
    trial = Trial.objects.get(run=run)
    assert progress["ends"][TrialEnd.INFRASTRUCTURE] == 1 and progress["ends"][TrialEnd.AGENT_ERROR] == 0, progress
    assert trial.status == TrialStatus.UNRESOLVED and trial.r_task is None and trial.r_harm is None
    assert "the model gateway failed 1 model call(s) itself" in trial.error
    assert chat.arrivals == []  # nothing reached the model
    calls = list(ModelCall.objects.filter(trial=trial))
    assert calls and all(c.gateway_failure and c.status_code == 500 for c in calls)
    assert "is not set in the worker" in calls[0].error
    assert "the gateway's own failure:" in page(admin_user, f"/evaluation/trials/{trial.pk}/")


@pytest.mark.django_db(transaction=True)
def test_a_harness_whose_calls_the_gateway_refused_by_its_own_limits_gets_no_verdict(
    examples_imported, celery_worker_thread, monkeypatch, settings
):
    """The command ends well (exit 0, both tests pass) although the gateway turned its calls away at the
    trial's connection cap: the result is not the agent's own, so infrastructure, not a verdict."""
    import socket

    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    settings.VERIHARM_TRIAL_MAX_ATTEMPTS = 1
    settings.VERIHARM_GATEWAY_MAX_CONNECTIONS = 1
    answers: list[bytes] = []
    backend: FakeBackend

    def shell(sandbox, command: str):
        if "harness " not in command:
            return ok("solution.sh")  # the verifiers: both tests pass
        # As a harness in the sandbox would: one connection held open, then a call on a second one.
        socket_path = str(backend.models[-1].socket_dir / "model.sock")
        with socket.socket(socket.AF_UNIX) as held, socket.socket(socket.AF_UNIX) as second:
            held.connect(socket_path)
            second.connect(socket_path)
            second.settimeout(30)
            answers.append(second.recv(65536))
        return ok("solution.sh")

    backend = FakeBackend(shell)
    monkeypatch.setattr(execution, "default_backend_factory", lambda name: backend)
    chat = ScriptedChat(["never"], api_key=REAL_KEY)
    with chat_server(chat):
        agent = Agent.objects.create(
            name="capped-harness",
            kind=AgentKind.COMMAND,
            network=NetworkMode.MODEL,
            model="scripted-1",
            config={
                "command": "harness {task_file}",
                "gateway": {"api": "openai", "base_url": chat.base_url, "api_key_env": KEY_ENV},
            },
            time_limit=120,
        )
        run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
        progress = wait_for_run(run, timeout=120)
    trial = Trial.objects.get(run=run)
    assert len(answers) == 1 and answers[0].startswith(b"HTTP/1.1 503"), (answers, trial.error)
    assert progress["ends"][TrialEnd.INFRASTRUCTURE] == 1 and progress["ends"][TrialEnd.VERDICT] == 0, progress
    assert trial.r_task is None and "model call(s) itself" in trial.error


@pytest.mark.django_db(transaction=True)
def test_a_harness_looping_past_its_call_cap_ends_as_an_agent_error_with_the_reason(
    examples_imported, celery_worker_thread, monkeypatch, settings
):
    """The command loops on its model (as OpenCode does on an answer it cannot read) and then ends
    well (exit 0, both tests pass): the gateway refused it past the trial's call cap, so the trial
    ends as the agent's error with that reason, never with a verdict, and is not tried again."""
    import httpx

    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    statuses: list[int] = []
    backend: FakeBackend

    def shell(sandbox, command: str):
        if "harness " not in command:
            return ok("solution.sh")  # the verifiers: both tests pass
        transport = httpx.HTTPTransport(uds=str(backend.models[-1].socket_dir / "model.sock"))
        with httpx.Client(transport=transport, base_url="http://gateway", timeout=30) as http:
            for _ in range(8):
                body = {"model": "scripted-1", "messages": [{"role": "user", "content": "again"}]}
                statuses.append(http.post("/v1/chat/completions", json=body).status_code)
        return ok("solution.sh")

    backend = FakeBackend(shell)
    monkeypatch.setattr(execution, "default_backend_factory", lambda name: backend)
    chat = ScriptedChat(["again"] * 10, api_key=REAL_KEY)
    with chat_server(chat):
        agent = Agent.objects.create(
            name="looping-harness",
            kind=AgentKind.COMMAND,
            network=NetworkMode.MODEL,
            model="scripted-1",
            config={
                "command": "harness {task_file}",
                "gateway": {"api": "openai", "base_url": chat.base_url, "api_key_env": KEY_ENV, "max_calls": 3},
            },
            time_limit=120,
        )
        run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend="local")
        progress = wait_for_run(run, timeout=120)
    trial = Trial.objects.get(run=run)
    assert statuses == [200] * 3 + [403] * 5
    assert progress["ends"][TrialEnd.AGENT_ERROR] == 1 and progress["ends"][TrialEnd.VERDICT] == 0, progress
    assert trial.status == TrialStatus.UNRESOLVED and trial.r_task is None and trial.r_harm is None
    # Not retried: another attempt would loop the same way.
    assert trial.error == "attempt 1: the harness made more than 3 model calls" and trial.attempts == 1
    assert len(chat.requests) == 3
    assert [c.status_code for c in ModelCall.objects.filter(trial=trial).order_by("pk")] == [200, 200, 200, 403]
