"""What the native harnesses do when their model fails them, and how the trial ends: never a verdict.

Each of Claude Code, Codex, OpenCode, Pi and Gemini CLI meets, in one run on the local backend (the
sandbox is the same on both: the gateway and the trial's ending are what is tested), an upstream that
always fails, one that answers plain JSON where a stream was asked (a careless compatible server),
and a model that never stops calling its shell tool. The first two end as agent errors: no model
ever answered the agent. The third ends at the gateway's call cap (an agent error naming it), or at
the harness's own turn limit (Claude Code, Gemini CLI: the tests then run, as for any agent stopped
at its limit); either way within the agent's limits.
"""

from __future__ import annotations

import json
import secrets
from contextlib import ExitStack

import pytest

from evaluation.models import ModelCall, Trial
from evaluation.models.taxonomy import TrialEnd
from evaluation.runs.launch import run_launch
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_for_run
from tests.evaluation.test_native_harnesses import CANDIDATE, HARNESSES, KEY_ENV, agent_for

STEP_LIMIT = 2
# The gateway's call cap of a harness agent: its step limit times HARNESS_CALLS_PER_STEP.
CALL_CAP = STEP_LIMIT * 5
# Harnesses that bound their own turns by the step limit.
OWN_TURN_LIMIT = {"claude-code", "gemini-cli"}


def _chat(mode: str, key: str) -> ScriptedChat:
    if mode == "failing":
        return ScriptedChat([["true"]], api_key=key, failures=[500] * 200)
    if mode == "unstreamed":
        return ScriptedChat([["touch made.txt"], "Done."], api_key=key, never_stream=True, toolless_answer="Title")
    return ScriptedChat([[f"echo step {n}"] for n in range(300)], api_key=key, toolless_answer="Title")


@pytest.mark.django_db(transaction=True)
def test_a_failing_a_careless_and_a_runaway_model_end_each_harness_without_a_verdict(
    harnesses_ready, examples_imported, celery_worker_thread, monkeypatch
):
    real_key = f"sk-native-{secrets.token_hex(16)}"
    monkeypatch.setenv(KEY_ENV, real_key)
    chats: dict[str, ScriptedChat] = {}
    with ExitStack() as servers:
        agents = {}
        for harness in HARNESSES:
            for mode in ("failing", "unstreamed", "runaway"):
                name = f"{harness} {mode}"
                chats[name] = servers.enter_context(chat_server(_chat(mode, real_key)))
                agents[name] = agent_for(harness, name, chats[name], step_limit=STEP_LIMIT, time_limit=30)
        run = run_launch(
            selection={"kind": "ids", "ids": [CANDIDATE]},
            agent_ids=[agent.pk for agent in agents.values()],
            backend="local",
        )
        wait_for_run(run, timeout=1200)

    trials = {t.agent.name: t for t in Trial.objects.filter(run=run).select_related("agent")}
    seen = {name: (t.end, t.error[-300:], t.r_task, t.r_harm, len(chats[name].requests)) for name, t in trials.items()}
    for name, trial in trials.items():
        harness, mode = name.split()
        calls = list(ModelCall.objects.filter(trial=trial))
        where = json.dumps({name: seen[name]}, default=str)
        assert real_key not in trial.error and all(real_key not in (c.error or "") for c in calls), where
        if mode == "runaway" and harness in OWN_TURN_LIMIT:
            # Stopped by its own turn limit: an outcome like any agent's limit, within the limit.
            assert trial.agent_hit_step_limit and trial.end == TrialEnd.VERDICT, where
            assert len(chats[name].requests) <= STEP_LIMIT + 1, where
            continue
        assert trial.end == TrialEnd.AGENT_ERROR and trial.r_task is None and trial.r_harm is None, where
        # Bounded: never past the gateway's call cap, whatever the harness's own retries.
        assert len(chats[name].requests) <= CALL_CAP, where
        if mode == "failing":
            assert trial.error, where
        elif mode == "unstreamed":
            assert any(c.status_code == 502 and "whole body" in c.error for c in calls), where
        else:
            assert f"more than {CALL_CAP} model calls" in trial.error, where
