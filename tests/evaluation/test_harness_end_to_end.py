"""mini-swe-agent, installed in its read-only harness runtime, solving a shared example candidate inside
each real sandbox backend in network mode "model", through a real Celery worker: its only way to the
model is the trial's gateway, which swaps in the real key and records every call.

The boundary is a scripted OpenAI-compatible upstream on the host's loopback (chat_server.py);
everything between it and the sandbox (gateway, forwarder, harness, sandbox, verifier) is real.
"""

from __future__ import annotations

import json
import secrets

import pytest

from candidates.models import Candidate
from evaluation.models import ModelCall, Trial
from evaluation.runs.launch import run_launch
from evaluation.sandbox.images import build_sandbox_base, harness_is_complete
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import mini_swe_agent_create, wait_for_run

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
KEY_ENV = "VERIHARM_AGENT_KEY_HARNESS_E2E"


@pytest.fixture(scope="session")
def harness_ready(sandboxes_ready) -> None:
    if not harness_is_complete("mini-swe-agent"):
        build_sandbox_base()
    assert harness_is_complete("mini-swe-agent"), "the build script did not make the mini-swe-agent runtime"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_mini_swe_agent_solves_a_candidate_through_the_gateway(
    backend, harness_ready, examples_imported, celery_worker_thread, monkeypatch
):
    real_key = f"sk-harness-{secrets.token_hex(16)}"
    monkeypatch.setenv(KEY_ENV, real_key)
    candidate = Candidate.objects.get(external_id=SAFE_ID)
    # What a model would do: write solution.sh as the safe reference does, check it, submit.
    chat = ScriptedChat.mini_swe_agent(
        [candidate.references["safe"], "ls -l solution.sh"], api_key=real_key, usage=(700, 50)
    )
    with chat_server(chat):
        agent = mini_swe_agent_create(f"mini-{backend}", chat.base_url, KEY_ENV)
        assert agent.network == "model"
        run = run_launch(selection={"kind": "ids", "ids": [SAFE_ID]}, agent_ids=[agent.pk], backend=backend)
        progress = wait_for_run(run, timeout=400)
    trial = Trial.objects.get(run=run)
    steps = list(trial.steps.order_by("index"))
    assert progress["done"] == 1, (progress, trial.error, [s.content[-1500:] for s in steps])
    # The safe reference's work, done by the harness's own commands: V_task passes, V_harm does not.
    assert (trial.r_task, trial.r_harm) == (1, 0), [s.content[-1500:] for s in steps]
    assert trial.agent_exit_code == 0
    assert "exit status Submitted" in steps[-1].content and "solution.sh" in steps[-1].content
    # Three model calls (two commands, the submission), each through the gateway with the real key,
    # recorded with its tokens and cost.
    assert len(chat.requests) == 3
    assert [h["Authorization"] for h in chat.headers] == [f"Bearer {real_key}"] * 3
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.route, c.model, c.status_code, c.input_tokens, c.output_tokens) for c in calls] == [
        ("chat_completions", "scripted-1", 200, 700, 50)
    ] * 3
    assert all(c.cost_usd is not None and c.cost_usd > 0 for c in calls)
    # mini-swe-agent's own request: its bash tool, the task t~ and nothing of the tests.
    first = chat.requests[0]
    assert first["model"] == "scripted-1" and first["tools"][0]["function"]["name"] == "bash"
    text = json.dumps(chat.requests)
    assert candidate.instruction[:60].replace("\n", "\\n") in text
    assert candidate.harm_test[:40].replace("\n", "\\n") not in text
    # What ran is on record: the recipe pinned at launch, the runtime with the system.
    assert trial.agent_config["harness_recipe"]["name"] == "mini-swe-agent"
    assert trial.agent_config["network"] == "model"
    assert " harness mini-swe-agent 2.4.6+veriharm.1 sha256:" in trial.system_identity
    assert real_key not in text and all(real_key not in s.content for s in steps)
