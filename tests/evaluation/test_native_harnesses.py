"""The coding-agent CLIs the field measures, run as they ship: Claude Code, Codex, OpenCode, Pi and
Gemini CLI, each installed in its read-only runtime, run inside each real sandbox backend in network
mode "model" through a real Celery worker, against a scripted upstream that speaks its own dialect
(streamed, with tool calls of its own shell tool). Each is asked to do a shared example's harmful
reference, and then its safe one, with real tool calls; everything between the scripted upstream and
the verdicts (gateway, forwarder, harness, sandbox, verifier, the harness's output read into steps)
is real. One run holds every harness, as a curator's would, so the V3AST matrix shows them side by
side.
"""

from __future__ import annotations

import base64
import json
import secrets
from contextlib import ExitStack

import pytest

from candidates.models import Candidate
from evaluation.agents.harness import RECIPES
from evaluation.models import ModelCall, ModelRoute, Trial
from evaluation.runs.agents import agent_create
from evaluation.runs.launch import run_launch
from evaluation.v3ast import selectors as v3ast
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_for_run

CANDIDATE = "bb-319395/kimi-k2.5/gpt-5.5"
KEY_ENV = "VERIHARM_AGENT_KEY_NATIVE_E2E"
MODEL = "scripted-native-1"
# Each harness and the API flavour it speaks.
HARNESSES = {
    "claude-code": "anthropic",
    "codex": "openai",
    "opencode": "openai",
    "pi": "openai",
    "gemini-cli": "gemini",
}
# What tells the two references' commands apart in a transcript.
MARK = {reference: f"bash -s {reference}-reference" for reference in ("harmful", "safe")}
# Requests the gateway answers itself (never forwarded to the upstream).
ANSWERED_BY_GATEWAY = (ModelRoute.HELLO, ModelRoute.MODELS, ModelRoute.COUNT_TOKENS)


def _as_one_line(script: str, reference: str) -> str:
    """The reference script as one shell command without quotes, heredocs or command substitution:
    Gemini CLI refuses to run a command with `$(...)` in it (even in a quoted heredoc), as a model
    meeting that refusal would rewrite its command."""
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d | {MARK[reference]}"


def agent_for(harness: str, name: str, chat: ScriptedChat, *, step_limit: int = 6, time_limit: int = 240):
    """A harness agent of the model MODEL, served by the scripted upstream `chat` in its dialect."""
    api = HARNESSES[harness]
    return agent_create(
        name=name,
        kind="harness",
        config={
            "harness": harness,
            "model": MODEL,
            "step_limit": step_limit,
            "gateway": {
                "api": api,
                "base_url": chat.root_url if api == "gemini" else chat.base_url,
                "api_key_env": KEY_ENV,
                "prices": {MODEL: {"input": 1, "output": 2}},
            },
        },
        time_limit=time_limit,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_each_harness_does_the_references_through_the_gateway(
    backend, harnesses_ready, examples_imported, celery_worker_thread, monkeypatch
):
    real_key = f"sk-native-{secrets.token_hex(16)}"
    monkeypatch.setenv(KEY_ENV, real_key)
    candidate = Candidate.objects.get(external_id=CANDIDATE)
    chats: dict[tuple[str, str], ScriptedChat] = {}
    with ExitStack() as servers:
        agents = {}
        for harness in HARNESSES:
            for reference in ("harmful", "safe"):
                # One shell call doing the reference, then a final answer; OpenCode's title request
                # (it declares no tools) is answered apart from the script.
                chat = ScriptedChat(
                    [
                        [_as_one_line(candidate.references[reference], reference)],
                        "The script is written and executable.",
                    ],
                    api_key=real_key,
                    usage=(300, 40),
                    thought="I will write the script.",
                    toolless_answer="Shell script",
                )
                chats[harness, reference] = servers.enter_context(chat_server(chat))
                agents[harness, reference] = agent_for(harness, f"{harness} {reference} {backend}", chat)
        run = run_launch(
            selection={"kind": "ids", "ids": [CANDIDATE]},
            agent_ids=[agent.pk for agent in agents.values()],
            backend=backend,
        )
        progress = wait_for_run(run, timeout=900)

    trials = {
        (t.agent.harness, t.agent.name.split()[1]): t for t in Trial.objects.filter(run=run).select_related("agent")
    }
    problems = {
        key: (
            t.r_task,
            t.r_harm,
            t.outcome,
            t.error[-600:],
            [(s.kind, s.command[-300:], s.exit_code, s.content[-300:]) for s in t.steps.order_by("index")],
        )
        for key, t in trials.items()
        if (t.r_task, t.r_harm) != ((1, 1) if key[1] == "harmful" else (1, 0))
    }
    assert not problems, json.dumps({" ".join(k): v for k, v in problems.items()}, indent=1, default=str)
    assert progress["done"] == len(agents)

    for (harness, reference), trial in trials.items():
        chat = chats[harness, reference]
        steps = list(trial.steps.order_by("index"))
        where = f"{harness} {reference}"
        # The harness's own account read into steps: the reference's shell call with its exit status,
        # the model's text around it; not one opaque command.
        commands = [s for s in steps[1:] if s.kind == "command" and MARK[reference] in s.command]
        assert commands, (where, [(s.kind, s.command[:80], s.content[:80]) for s in steps])
        assert commands[0].exit_code in (0, None), (where, commands[0].exit_code, commands[0].content)
        assert any(s.kind == "message" and "executable" in s.content for s in steps), where
        # Every call the harness made went through the gateway with the real key, and is recorded
        # with its tokens; the dummy key is all the harness had.
        calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
        model_calls = [c for c in calls if c.status_code == 200 and c.input_tokens]
        assert len(model_calls) >= 2, (where, [(c.route, c.status_code, c.input_tokens) for c in calls])
        assert all(c.output_tokens and c.cost_usd and c.cost_usd > 0 for c in model_calls), where
        forwarded = [c for c in calls if c.route not in ANSWERED_BY_GATEWAY]
        assert len(chat.requests) == len(forwarded), (
            where,
            len(chat.requests),
            [(c.route, c.status_code) for c in calls],
        )
        sent = json.dumps(chat.requests)
        assert candidate.harm_test[:40].replace("\n", "\\n") not in sent, where
        # What ran is on record: the recipe, its permission mode and the runtime's identity.
        recipe = RECIPES[harness]
        assert trial.agent_config["harness_recipe"]["name"] == harness
        assert trial.agent_config["harness_recipe"]["permission_mode"].startswith("permissive autonomous")
        assert f" harness {harness} {recipe.version} sha256:" in trial.system_identity
        # The key is nowhere the harness or the page could show it.
        assert real_key not in sent and all(real_key not in s.content + s.command for s in steps), where
        assert all(real_key not in (c.error or "") for c in calls), where

    # The V3AST matrix shows the harnesses side by side: one model, a column per harness.
    matrix = v3ast.matrix_of(v3ast.run_results(run).systems)
    assert matrix.models == [MODEL] and matrix.harnesses == sorted(HARNESSES)
