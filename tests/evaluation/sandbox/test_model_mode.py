"""Network mode "model" on both backends: from inside, only the trial's gateway answers.

A real gateway (evaluation.gateway, with a unique random key in this process's environment) serves a
scripted upstream on the host's loopback. Commands inside the sandbox then try, as an agent would,
the host's PostgreSQL and Redis, a web server on the host (all addresses), the host's other
addresses and Docker's bridge gateway, and the outside world; they talk to the gateway, which must
refuse what it does not serve; and they look for the key everywhere they can. The probe is the one
the native harnesses run with their own shell tools (tests/evaluation/containment_probe.py).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from evaluation.gateway import Gateway, serve, upstream_from_config
from evaluation.models import ModelCall
from evaluation.sandbox import Environment, Sandbox, SandboxBackend
from evaluation.sandbox.base import WRITABLE_SYSTEM_DIRS
from evaluation.sandbox.network import GATEWAY_MOUNT, MODEL_PORT, ModelAccess, harness_env
from evaluation.trials.model_access import gateway_for_trial
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.containment_probe import assert_contained, findings, probe_command, probe_targets
from tests.evaluation.test_gateway import make_trial

KEY_ENV = "VERIHARM_AGENT_KEY_CONTAINMENT"


@pytest.fixture
def model_gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ScriptedChat, Any, str]]:
    key = f"sk-containment-{secrets.token_hex(20)}"
    monkeypatch.setenv(KEY_ENV, key)
    chat = ScriptedChat(["scripted answer"] * 5, api_key=key, echo_credentials=True)
    with chat_server(chat):
        upstream = upstream_from_config({"api": "openai", "base_url": chat.base_url, "api_key_env": KEY_ENV})
        with serve(Gateway(upstream)) as running:
            yield chat, running, key


def _probe(sandbox: Sandbox, key: str, targets: list[tuple[str, int]]) -> dict[str, Any]:
    command = probe_command(
        targets=targets,
        key=key,
        dirs=[*WRITABLE_SYSTEM_DIRS, sandbox.workdir, GATEWAY_MOUNT],
        gateway_port=MODEL_PORT,
        list_processes=True,
    )
    result = sandbox.exec(command, 120, env=harness_env("openai"))
    assert result.exit_code == 0, result
    return findings(result.stdout)


@pytest.mark.parametrize("mode", ["model", "none"])
def test_only_the_gateway_answers_and_no_key_is_inside(
    backend: SandboxBackend,
    sandboxes: list[Sandbox],
    web_server: int,
    model_gateway: Any,
    mode: str,
    processes_in: Any,
) -> None:
    chat, gateway, key = model_gateway
    # Checked first as controls: the host itself reaches the database, Redis and the web server on every address.
    targets = probe_targets(web_server)

    access = ModelAccess(socket_dir=gateway.socket_dir) if mode == "model" else None
    sandbox = backend.create(Environment(files={"task.txt": "x"}), **({"model": access} if access else {}))
    sandboxes.append(sandbox)
    seen = _probe(sandbox, key, targets)

    assert_contained(seen, f"{backend.name} {mode}")
    if mode == "none":
        assert all(status == 0 for status, _ in seen["gateway"].values()), seen["gateway"]
        assert chat.requests == []
        return
    status, text = seen["gateway"]["chat"]
    assert status == 200 and "scripted answer" in text, seen["gateway"]
    # The upstream got the real key although the sandbox sent the dummy one; its echo of the
    # credentials came back scrubbed.
    assert [h["Authorization"] for h in chat.headers] == [f"Bearer {key}"] and key not in text
    # The model list is the gateway's own answer (no model is configured here, so an empty list);
    # a route it does not serve is refused.
    assert seen["gateway"]["models"][0] == 200 and '"data": []' in seen["gateway"]["models"][1]
    assert seen["gateway"]["embeddings"][0] == 404
    assert seen["gateway"]["other_host"][0] == 421 and "names another upstream" in seen["gateway"]["other_host"][1]
    assert seen["gateway"]["absolute"][0] == 400 and "names a host" in seen["gateway"]["absolute"][1]
    assert len(chat.requests) == 1  # nothing refused reached the upstream
    # The forwarder ran beside the command, and nothing of it outlives the exec.
    assert any(f"{MODEL_PORT} {GATEWAY_MOUNT}/model.sock" in p for p in seen["processes"])
    assert processes_in(sandbox) == []
    assert (
        sandbox.exec(
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {MODEL_PORT}), 2)\" "
            "2>/dev/null && echo open || echo closed",
            30,
        ).stdout.strip()
        == "open"
    )
    # Copies of the state (restores, the tests' copies) have no model access.
    snapshot = sandbox.snapshot()
    try:
        copy = snapshot.restore()
        sandboxes.append(copy)
        assert copy.exec(
            f'ls {GATEWAY_MOUNT} 2>&1; python3 -c "import socket; '
            f"socket.create_connection(('127.0.0.1', {MODEL_PORT}), 2)\" 2>/dev/null || echo closed",
            30,
        ).stdout.endswith("closed\n")
        verdict = snapshot.verify(
            f"import os, socket\ndef test_no_gateway():\n    assert not os.path.exists({GATEWAY_MOUNT!r})\n"
            f"    try:\n        socket.create_connection(('127.0.0.1', {MODEL_PORT}), 2)\n"
            "    except OSError:\n        return\n    raise AssertionError('gateway reachable')\n",
            60,
        )
        assert verdict.exit_code == 0, verdict
    finally:
        snapshot.discard()


_PARALLEL = r"""
import http.client, json, sys, threading
args = json.loads(sys.argv[1])
body = json.dumps({"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]})
out = []
lock = threading.Lock()
def ask():
    connection = http.client.HTTPConnection("127.0.0.1", args["port"], timeout=60)
    try:
        connection.request("POST", "/v1/chat/completions", body=body,
                           headers={"Content-Type": "application/json", "Authorization": "Bearer dummy"})
        answer = connection.getresponse()
        seen = [answer.status, answer.read().decode("utf-8", "replace"), str(answer.getheaders())]
    except OSError as exc:
        seen = [0, str(exc), ""]
    with lock:
        out.append(seen)
threads = [threading.Thread(target=ask) for _ in range(args["calls"])]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(out))
"""


@pytest.mark.django_db(transaction=True)
def test_parallel_calls_from_inside_cannot_overshoot_a_one_call_budget_nor_see_an_echoed_key(
    backend: SandboxBackend,
    sandboxes: list[Sandbox],
    examples_imported: Any,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    key = f"sk-containment-{secrets.token_hex(20)}"
    monkeypatch.setenv(KEY_ENV, key)
    settings.VERIHARM_GATEWAY_MAX_CONNECTIONS = 64
    # One call: 100 input tokens at 2.5 and 20 output tokens at 10 USD per million.
    one_call = Decimal("0.00045")
    trial = make_trial(f"inside-race-{backend.name}", budget=str(one_call))
    chat = ScriptedChat(["ok"] * 50, api_key=key, usage=(100, 20), delay=0.3, echo_in_header=True)
    with chat_server(chat):
        upstream = upstream_from_config(
            {
                "api": "openai",
                "base_url": chat.base_url,
                "api_key_env": KEY_ENV,
                "prices": {"m": {"input": 2.5, "output": 10}},
                "max_concurrency": 40,
            }
        )
        with gateway_for_trial(trial.pk, upstream) as gateway:
            sandbox = backend.create(Environment(files={"task.txt": "x"}), model=ModelAccess(gateway.socket_dir))
            sandboxes.append(sandbox)
            sandbox.write_file("/tmp/parallel.py", _PARALLEL)
            args = json.dumps({"port": MODEL_PORT, "calls": 40})
            result = sandbox.exec(f"python3 /tmp/parallel.py {json.dumps(args)}", 120, env=harness_env("openai"))
            assert result.exit_code == 0, result
            answers = json.loads(result.stdout)
    statuses = sorted(status for status, _, _ in answers)
    assert len(answers) == 40 and 1 <= statuses.count(200) <= 2, statuses
    assert statuses.count(429) >= 38
    assert all("budget_exhausted" in text for status, text, _ in answers if status == 429)
    # The documented bound: the budget plus at most one call.
    assert 1 <= len(chat.requests) <= 2
    assert sum(c.cost_usd for c in ModelCall.objects.filter(trial=trial)) <= 2 * one_call
    # The upstream put the real key in x-request-id: the sandbox saw it scrubbed.
    assert key not in result.stdout and "key removed by the gateway" in result.stdout
