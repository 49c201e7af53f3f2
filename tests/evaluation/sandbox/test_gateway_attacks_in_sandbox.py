"""The model gateway's attacks (tests/evaluation/test_gateway_hardening.py) sent from inside real
sandboxes, on both backends: a trial's gateway for a trial in the database, the scripted upstream on
the host's loopback, and the client (`gateway_client.CLIENT`) in the sandbox, on the gateway's socket."""

from __future__ import annotations

import json
import secrets
import threading
import time
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection

from evaluation.models import ModelBudgetHold, ModelCall, Trial
from evaluation.sandbox import Environment, Sandbox, SandboxBackend
from evaluation.sandbox.network import ModelAccess
from evaluation.trials.model_access import gateway_for_trial
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_until
from tests.evaluation.sandbox.gateway_client import raw_action, run_client
from tests.evaluation.test_gateway import CHAT, KEY_ENV, make_trial, upstream


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A key of its own for each test, so that finding it anywhere is this test's leak."""
    made = f"sk-inside-{secrets.token_hex(24)}"
    monkeypatch.setenv(KEY_ENV, made)
    return made


def _sandbox(backend: SandboxBackend, sandboxes: list[Sandbox], gateway: Any) -> Sandbox:
    sandbox = backend.create(Environment(files={"task.txt": "x"}), model=ModelAccess(gateway.socket_dir))
    sandboxes.append(sandbox)
    return sandbox


def _call(body: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"do": "call", "body": body or CHAT}


@pytest.mark.django_db(transaction=True)
def test_a_control_byte_or_a_non_ascii_header_from_inside_is_refused_and_takes_no_slot(
    backend: SandboxBackend, sandboxes: list[Sandbox], examples_imported: Any, key: str
) -> None:
    chat = ScriptedChat(["ok"] * 5, api_key=key)
    # One slot: a refused request that kept it would make the next call wait out its 3 s and get a 429.
    config = {"max_concurrency": 1, "request_timeout": 3}
    body = json.dumps(CHAT).encode()
    refused = [
        (b"POST /v1/chat/completions?a=\x01b HTTP/1.1\r\n", "request target"),
        (b"POST /v1/chat/completions?a=\x7fb HTTP/1.1\r\n", "request target"),
        (b"POST /v1/chat/completions HTTP/1.1\r\nUser-Agent: agent-caf\xe9\r\n", "user-agent header"),
    ] * 2
    tail = b"Host: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
    with chat_server(chat):
        first = make_trial(f"inside-encode-1-{backend.name}")
        with gateway_for_trial(first.pk, upstream(chat, **config)) as gw:
            sandbox = _sandbox(backend, sandboxes, gw)
            answers, _ = run_client(
                sandbox, [raw_action(head + tail % len(body) + body) for head, _ in refused] + [_call()]
            )
        for (head, named), answer in zip(refused, answers, strict=False):
            assert answer["status"] == 400 and named in answer["body"], (head, answer)
            assert "outside ASCII" in answer["body"], answer
        assert answers[-1]["status"] == 200 and "ok" in answers[-1]["body"], answers[-1]
        assert len(chat.arrivals) == 1  # none of the refused requests reached the upstream
        # The next trial's gateway on this worker process serves its sandbox too.
        second = make_trial(f"inside-encode-2-{backend.name}")
        with gateway_for_trial(second.pk, upstream(chat, **config)) as gw:
            answers, _ = run_client(_sandbox(backend, sandboxes, gw), [_call()])
        assert answers[0]["status"] == 200, answers
    assert ModelCall.objects.filter(trial__in=[first, second], status_code=200).count() == 2
    assert not ModelCall.objects.filter(trial__in=[first, second]).exclude(status_code=200).exists()


@pytest.mark.django_db(transaction=True)
def test_an_abandoned_stream_and_a_usage_less_answer_from_inside_are_estimated_and_spend_the_budget(
    backend: SandboxBackend, sandboxes: list[Sandbox], examples_imported: Any, key: str
) -> None:
    budget = Decimal("0.0005")
    trial = make_trial(f"inside-uncounted-{backend.name}", budget=str(budget))
    long_answer = "a long streamed answer " * 100
    chat = ScriptedChat([long_answer, long_answer, "never"], api_key=key, send_usage=False, event_delay=0.01)
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw:
        sandbox = _sandbox(backend, sandboxes, gw)
        (streamed,), _ = run_client(sandbox, [{"do": "abandon", "body": {**CHAT, "stream": True}, "lines": 20}])
        assert streamed["status"] == 200 and "data:" in streamed["body"], streamed
        # The gateway sees the client gone at its next write, then records the call.
        wait_until(lambda: ModelCall.objects.filter(trial=trial).exists(), 30, "the abandoned call's record")
        whole, after = run_client(sandbox, [_call(), _call()])[0]
    assert whole["status"] == 200 and "a long streamed answer" in whole["body"], whole
    assert '"usage"' not in whole["body"]
    # What the two estimated calls cost fills the budget: the sandbox's next call is refused.
    assert after["status"] == 429 and json.loads(after["body"])["error"]["type"] == "budget_exhausted", after
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.streamed, c.usage_estimated, c.usage_reported) for c in calls] == [
        (True, True, False),
        (False, True, False),
    ]
    assert "client left" in calls[0].error and calls[0].output_tokens > 0
    assert calls[1].output_tokens >= len(long_answer) // 4  # a whole answer's characters at four a token
    assert all(c.cost_usd and c.cost_usd > 0 for c in calls)
    assert sum(c.cost_usd or 0 for c in calls) >= budget
    assert len(chat.requests) == 2  # the refused call never reached the upstream
    assert not ModelBudgetHold.objects.filter(trial=trial).exists()


def _stored_rows(trial: Trial) -> str:
    """Every column of the trial's row and of its model calls, as PostgreSQL renders them."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT row_to_json(t)::text FROM {Trial._meta.db_table} t WHERE id = %s", [trial.pk])
        rows = [row[0] for row in cursor.fetchall()]
        cursor.execute(f"SELECT row_to_json(c)::text FROM {ModelCall._meta.db_table} c WHERE trial_id = %s", [trial.pk])
        rows += [row[0] for row in cursor.fetchall()]
    return "\n".join(rows)


@pytest.mark.django_db(transaction=True)
def test_a_key_in_a_response_header_or_across_byte_300_of_an_error_never_reaches_the_sandbox_nor_the_database(
    backend: SandboxBackend, sandboxes: list[Sandbox], examples_imported: Any, key: str
) -> None:
    trial = make_trial(f"inside-key-leaks-{backend.name}")
    # {"error": {"message": " is 23 bytes: the key starts at byte 288 and ends past byte 300.
    message = "x" * 258 + f"Bearer {key} was rejected"
    chat = ScriptedChat(["echoed"], api_key=key, echo_in_header=True, failures=[400], failure_message=message)
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw:
        sandbox = _sandbox(backend, sandboxes, gw)
        answers, received = run_client(sandbox, [_call(), _call(), _call({**CHAT, "stream": True})])
    assert [a["status"] for a in answers] == [400, 200, 200], answers
    assert "xxxx" in answers[0]["body"] and "was rejected" in answers[0]["body"]
    assert key not in received and key[:12] not in received
    # The upstream put the real key in x-request-id of every answer: the sandbox got it scrubbed.
    assert all("[key removed by the gateway]" in a["headers"] for a in answers), answers
    stored = _stored_rows(trial)
    assert stored.count('"error"') >= 1 and "xxxx" in stored  # the cut error body was stored
    assert key[:12] not in stored, stored  # and no part of the key, not even its start


def _threads() -> int:
    """Every thread of this (the worker's) process, not only those Python started."""
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("Threads:")).split()[1])


def _gateway_threads(trial_id: int) -> tuple[int, int]:
    """The threads of the trial's gateway (its accepting thread and its pool, by name), and the others."""
    names = [thread.name for thread in threading.enumerate()]
    own = sum(name == f"model-gateway-{trial_id}" or name.startswith(f"model-gateway-{trial_id}_") for name in names)
    return own, len(names) - own


# The sandbox's exec runs beside the gateway with threads of its own: its output pumps, its input feeder.
EXEC_THREADS = 3


@pytest.mark.django_db(transaction=True)
def test_idle_connections_and_oversized_bodies_from_inside_stay_within_the_documented_bounds(
    backend: SandboxBackend, sandboxes: list[Sandbox], examples_imported: Any, key: str, settings: Any
) -> None:
    cap = int(settings.VERIHARM_GATEWAY_MAX_CONNECTIONS)
    limit = int(settings.VERIHARM_GATEWAY_MAX_BODY_BYTES)
    idle = 300
    trial = make_trial(f"inside-bounds-{backend.name}")
    chat = ScriptedChat(["ok"] * 5, api_key=key)
    seen: list[tuple[int, int, int]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append((*_gateway_threads(trial.pk), _threads()))
            time.sleep(0.02)

    actions = [
        {"do": "idle", "count": idle, "cap": cap, "hold": 3},
        {"do": "oversized", "length": limit + 1, "send_body": False},
        {"do": "oversized", "length": 16 * limit, "send_body": True},
        _call(),
    ]
    with chat_server(chat):
        watcher = threading.Thread(target=watch)
        watcher.start()
        before_others, before = _gateway_threads(trial.pk)[1], _threads()
        try:
            with gateway_for_trial(trial.pk, upstream(chat)) as gw:
                answers, _ = run_client(_sandbox(backend, sandboxes, gw), actions)
        finally:
            done.set()
            watcher.join()
    opened, *bodies, normal = answers
    # Past the cap, each connection was answered 503 at once and closed, not queued.
    assert "opened" in opened, opened
    assert opened["opened"] == idle and len(opened["answered"]) == idle - cap, opened
    assert all(a.startswith("HTTP/1.1 503") and "connections open" in a for a in opened["answered"]), opened
    # The documented bound: a trial's gateway runs at most MAX_CONNECTIONS + 1 threads (and did start
    # its pool); nothing else in the process grew a thread per connection, in Python or outside it.
    own, others, total = (max(column) for column in zip(*seen, strict=True))
    assert cap <= own <= cap + 1, own
    assert others <= before_others + EXEC_THREADS, (before_others, others)
    assert total <= before + cap + 1 + EXEC_THREADS, (before, total)
    # Each oversized body was refused on its Content-Length: the first sent none of its body and still
    # got its answer; the second could not push even the limit's worth before the gateway hung up.
    for body in bodies:
        assert body["status"] == 413 and f"over {limit} bytes" in body["body"], body
    assert bodies[1]["sent"] < limit, bodies[1]
    assert normal["status"] == 200, normal
    assert len(chat.requests) == 1
