"""Containment with the native harnesses' own processes in the sandbox, on both backends.

Each of Claude Code, Codex, OpenCode, Pi and Gemini CLI is told by its scripted model to run, with
its own shell tool, what a hostile agent would: try the host's PostgreSQL, Redis and a web server on
every host address, the outside world and DNS; look for the real key in every process's environment
and command line and in every writable place (the harness's private home and config folders
included); and leave a process behind in a new session. The probe runs as the harness's child, with
the harness's environment, so what it finds is what the harness could have found. Nothing may be
reached, the key may be nowhere, and nothing may outlive the trial.

The probe is the containment probe of tests/evaluation/containment_probe.py, the one
tests/evaluation/sandbox/test_model_mode.py runs in a sandbox of its own.
"""

from __future__ import annotations

import json
import secrets
from contextlib import ExitStack

import pytest

from evaluation.models import Trial
from evaluation.runs.launch import run_launch
from evaluation.sandbox.base import WRITABLE_SYSTEM_DIRS
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_for_run
from tests.evaluation.containment_probe import (
    PROBE_MARK,
    assert_contained,
    findings,
    linger_marker,
    lingering,
    probe_command,
    probe_targets,
)
from tests.evaluation.test_native_harnesses import CANDIDATE, HARNESSES, KEY_ENV, agent_for


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_each_harness_reaches_nothing_but_its_gateway_sees_no_key_and_leaves_nothing_running(
    backend,
    harnesses_ready,
    examples_imported,
    celery_worker_thread,
    web_server,
    monkeypatch,
):
    real_key = f"sk-native-{secrets.token_hex(16)}"
    monkeypatch.setenv(KEY_ENV, real_key)
    # Checked first as controls: the host itself reaches the database, Redis and the web server on every address.
    targets = probe_targets(web_server)
    markers = {harness: linger_marker() for harness in HARNESSES}
    chats: dict[str, ScriptedChat] = {}
    with ExitStack() as servers:
        agents = {}
        for harness in HARNESSES:
            probe = probe_command(
                targets=targets, key=real_key, dirs=[*WRITABLE_SYSTEM_DIRS, "/home"], linger=markers[harness]
            )
            chat = ScriptedChat(
                [[probe], "Probed."],
                api_key=real_key,
                usage=(300, 40),
                toolless_answer="Probe",
            )
            chats[harness] = servers.enter_context(chat_server(chat))
            agents[harness] = agent_for(harness, f"{harness} probe {backend}", chat)
        run = run_launch(
            selection={"kind": "ids", "ids": [CANDIDATE]},
            agent_ids=[agent.pk for agent in agents.values()],
            backend=backend,
        )
        wait_for_run(run, timeout=900)

    trials = list(Trial.objects.filter(run=run).select_related("agent"))
    assert sorted(t.agent.harness for t in trials) == sorted(HARNESSES), [t.agent.harness for t in trials]
    for trial in trials:
        harness = trial.agent.harness
        steps = list(trial.steps.order_by("index"))
        outputs = [s.content for s in steps if s.kind == "command" and PROBE_MARK + "{" in s.content]
        where = json.dumps(
            {harness: [trial.end, trial.error[-300:], [(s.kind, s.command[:60], s.content[-300:]) for s in steps]]}
        )
        assert outputs, where
        seen = findings(outputs[0])
        assert_contained(seen, harness)
        # The harness ran in its private home under the sandbox's scratch, not the image's.
        assert seen["home"].startswith("/tmp/"), (harness, seen)
        assert lingering(markers[harness]) == [], (harness, lingering(markers[harness]))
        # It got its answer through the gateway, with the real key only outside.
        assert chats[harness].requests and real_key not in json.dumps(chats[harness].requests), harness
