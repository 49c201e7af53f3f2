"""The model gateway under attack from the harness side, against its real Unix-socket server and the
scripted upstream on loopback: the budget under parallel calls, slots and database connections on
every path, spend that must be counted, the key in headers and cut error bodies, and the bounds on
threads and memory. (From inside real sandboxes: tests/evaluation/sandbox/test_model_mode.py and
test_gateway_attacks_in_sandbox.py.)"""

from __future__ import annotations

import itertools
import json
import os
import resource
import socket
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection

from evaluation.gateway import Gateway, serve
from evaluation.gateway.ledger import CallRecord
from evaluation.models import ModelBudgetHold, ModelCall
from evaluation.trials.gateway_ledger import RunLedger
from evaluation.trials.model_access import gateway_for_trial
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.conftest import wait_until
from tests.evaluation.test_gateway import CHAT, KEY_ENV, REAL_KEY, client, make_trial, upstream

# 100 input tokens at 2.5 USD and 20 output tokens at 10 USD per million.
ONE_CALL = Decimal("0.00045")


def parallel(gw: Any, count: int, body: dict[str, Any] | None = None) -> list[httpx.Response]:
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def call() -> None:
        with client(gw) as http:
            answer = http.post("/v1/chat/completions", json=body or CHAT)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=call) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return answers


def raw_status(gw: Any, request: bytes) -> tuple[int, str]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(gw.socket_path))
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


@pytest.mark.django_db(transaction=True)
def test_forty_parallel_calls_against_a_one_call_budget_forward_at_most_one_call_past_it(
    examples_imported, monkeypatch, settings
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    settings.VERIHARM_GATEWAY_MAX_CONNECTIONS = 64  # every call reaches the budget, none the connection cap
    trial = make_trial("gw-race", budget=str(ONE_CALL))
    chat = ScriptedChat(["ok"] * 50, api_key=REAL_KEY, usage=(100, 20), delay=0.3)
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat, max_concurrency=40)) as gw:
        answers = parallel(gw, 40)
        refused = [a for a in answers if a.status_code == 429]
        assert all(a.json()["error"]["type"] == "budget_exhausted" for a in refused), [a.text for a in refused]
        assert gw.budget_refusals == len(refused)
    # The documented bound: the budget plus at most one call.
    recorded = list(ModelCall.objects.values_list("status_code", "retries", "cost_usd", "latency"))
    assert 1 <= len(chat.requests) <= 2 and len(refused) >= 38, (
        chat.arrivals,
        recorded,
        [a.status_code for a in answers],
    )
    spent = sum(c.cost_usd for c in ModelCall.objects.filter(trial__run=trial.run))
    assert spent <= ONE_CALL + ONE_CALL
    assert not ModelBudgetHold.objects.exists()  # every hold was settled or given back


@pytest.mark.django_db(transaction=True)
def test_a_call_is_settled_between_two_reservations_of_its_run_never_during_one(examples_imported):
    trial = make_trial("gw-settle", budget="1")
    ledger = RunLedger(run_id=trial.run_id, trial_id=trial.pk, attempt=1, budget_usd=Decimal("1"))
    reservation = ledger.reserve(Decimal("0.9"), 60)
    call = CallRecord(
        route="chat_completions",
        model="m",
        streamed=False,
        status_code=200,
        input_tokens=100,
        output_tokens=20,
        usage_reported=True,
        usage_estimated=False,
        gateway_failure=False,
        latency=0.1,
        retries=0,
        cost_usd=ONE_CALL,
    )
    settled = threading.Event()
    dsn = f"dbname={connection.settings_dict['NAME']} user=postgres host=127.0.0.1"
    with psycopg.connect(dsn) as other:
        # Another worker's reservation, between its read of what was spent and its read of the holds.
        other.execute("SELECT 1 FROM evaluation_run WHERE id = %s FOR UPDATE", [trial.run_id])
        worker = threading.Thread(target=lambda: (ledger.settle(reservation, call), settled.set()))
        worker.start()
        # The settlement waits: had it gone through, that reservation would count the call nowhere.
        assert not settled.wait(1.0)
        assert ModelBudgetHold.objects.filter(pk=reservation.id).exists() and not ModelCall.objects.exists()
        other.commit()
        assert settled.wait(10)
        worker.join(10)
    assert not ModelBudgetHold.objects.exists()
    assert list(ModelCall.objects.values_list("cost_usd", flat=True)) == [ONE_CALL]


@pytest.mark.django_db(transaction=True)
def test_requests_the_upstream_client_cannot_encode_leave_no_slot_taken(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    first = make_trial("gw-encode-1")
    chat = ScriptedChat(["ok"] * 20, api_key=REAL_KEY)
    body = json.dumps(CHAT).encode()
    config = {"max_concurrency": 1, "request_timeout": 3}
    with chat_server(chat), gateway_for_trial(first.pk, upstream(chat, **config)) as gw:
        for head, named in [
            (b"POST /v1/chat/completions?a=\x01b HTTP/1.1\r\n", "request target"),
            (b"POST /v1/chat/completions?a=\x7fb HTTP/1.1\r\n", "request target"),
            (b"POST /v1/chat/completions HTTP/1.1\r\nUser-Agent: agent-caf\xe9\r\n", "user-agent header"),
            (b"POST /v1/chat/completions HTTP/1.1\r\nAccept: a\x01b\r\n", "accept header"),
        ] * 2:
            status, text = raw_status(
                gw, head + b"Host: gateway\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
            )
            assert status == 400 and named in text and "outside ASCII" in text, (head, status, text)
        # The trial's one slot is free: its next call goes through within its 3 s.
        with client(gw) as http:
            assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
    assert len(chat.requests) == 1
    # And the next trial on this worker too.
    second = make_trial("gw-encode-2")
    with chat_server(chat), gateway_for_trial(second.pk, upstream(chat, **config)) as gw, client(gw) as http:
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 200


class _Breaks(httpx.BaseTransport):
    """An upstream client that fails with something other than httpx.HTTPError on its first send."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        if self.sent == 1:
            raise UnicodeEncodeError("ascii", "é", 0, 1, "a header the client could not encode")
        return self.inner.handle_request(request)


@pytest.mark.django_db(transaction=True)
def test_a_client_error_outside_httpx_gives_the_slot_back(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    chat = ScriptedChat(["ok"] * 5, api_key=REAL_KEY)
    with chat_server(chat):
        gateway = Gateway(upstream(chat, max_concurrency=1, request_timeout=3), transport=_Breaks())
        with serve(gateway) as gw, client(gw) as http:
            failed = http.post("/v1/chat/completions", json=CHAT)
            assert failed.status_code == 502 and "the gateway failed" in failed.text
            assert gw.gateway_failures == 1
            # With the slot still held this call would wait out its 3 s and get the gateway's 429.
            assert http.post("/v1/chat/completions", json=CHAT).status_code == 200


def _database_sockets(port: int) -> int:
    """TCP connections to the database server this process holds open, as its own sockets show them.
    (The server's pg_stat_activity keeps a closed connection's backend for a moment while it exits,
    which on a loaded machine shows the slot's previous connection beside its next one.)"""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    held = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            established = fields[3] == "01"
            if established and int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                held += 1
    return held


@pytest.mark.django_db(transaction=True)
def test_sixty_parallel_slow_calls_hold_a_small_fixed_number_of_database_connections(
    examples_imported, monkeypatch, settings
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    settings.VERIHARM_GATEWAY_MAX_CONNECTIONS = 64
    trial = make_trial("gw-connections", budget="100")
    port = int(connection.settings_dict["PORT"] or 5432)
    # Long enough that the calls overlap even on a busy machine.
    chat = ScriptedChat(["ok"] * 70, api_key=REAL_KEY, delay=4)
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(_database_sockets(port))
            time.sleep(0.05)

    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat, max_concurrency=64)) as gw:
        connection.ensure_connection()
        before = _database_sockets(port)
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            answers = parallel(gw, 60)
        finally:
            done.set()
            watcher.join()
    assert [a.status_code for a in answers] == [200] * 60
    assert chat.max_in_flight >= 30  # the calls really were in flight together
    # The test's own connection, plus at most VERIHARM_GATEWAY_DB_CONNECTIONS for the gateway's threads.
    assert max(seen) <= before + settings.VERIHARM_GATEWAY_DB_CONNECTIONS, (before, max(seen))
    assert ModelCall.objects.filter(trial=trial).count() == 60


@pytest.mark.django_db(transaction=True)
def test_an_abandoned_stream_and_a_usage_less_answer_count_against_the_budget(
    examples_imported, monkeypatch, admin_client
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-uncounted", budget="0.0005")
    long_answer = "a long streamed answer " * 100
    chat = ScriptedChat([long_answer, long_answer, "never"], api_key=REAL_KEY, send_usage=False, event_delay=0.01)
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw, client(gw) as http:
        # Values the upstreams' parsers read differently are refused, naming the field.
        for value in (1, "true", "false", [True]):
            answer = http.post("/v1/chat/completions", json={**CHAT, "stream": value})
            assert answer.status_code == 400 and "stream must be true or false" in answer.text, answer.text
        with http.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as answer:
            lines = answer.iter_lines()
            for _ in range(20):
                next(lines)  # a few events, then the client goes away
        # The gateway sees the client gone at its next write, then records the call.
        wait_until(lambda: ModelCall.objects.filter(trial=trial).exists(), 30, "the abandoned call's record")
        first = ModelCall.objects.get(trial=trial)
        assert first.usage_estimated and not first.usage_reported and first.output_tokens > 0
        assert first.cost_usd > 0 and "client left" in first.error
        whole = http.post("/v1/chat/completions", json=CHAT)
        assert whole.status_code == 200 and "usage" not in whole.json()
        # What the two estimated calls cost now fills the budget: the next call is refused.
        refused = http.post("/v1/chat/completions", json=CHAT)
        assert refused.status_code == 429 and refused.json()["error"]["type"] == "budget_exhausted"
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.streamed, c.usage_estimated) for c in calls] == [(True, True), (False, True)]
    page = admin_client.get(f"/evaluation/trials/{trial.pk}/").content.decode()
    assert page.count('data-testid="usage-estimated"') == 2  # the trial page says which figures are estimates
    # A whole answer's output: its characters at four a token.
    assert calls[1].output_tokens >= len(long_answer) // 4
    assert sum(c.cost_usd for c in calls) >= Decimal("0.0005") and len(chat.requests) == 2


@pytest.mark.django_db(transaction=True)
def test_a_call_streaming_when_the_command_ends_is_recorded_with_what_it_streamed(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-drain")
    chat = ScriptedChat(["a slow answer " * 40], api_key=REAL_KEY, usage=(50, 500), event_delay=0.05)
    started = threading.Event()

    def read_slowly(gw: Any) -> None:
        try:
            with client(gw) as http, http.stream("POST", "/v1/responses", json={**CHAT, "stream": True}) as answer:
                for _ in answer.iter_lines():
                    started.set()
        except httpx.HTTPError:
            pass  # the gateway closed under it, as the sandbox's command ended

    with chat_server(chat):
        with gateway_for_trial(trial.pk, upstream(chat)) as gw:
            reader = threading.Thread(target=read_slowly, args=(gw,))
            reader.start()
            assert started.wait(30)
        # The gateway has closed: the call is already recorded, with what was streamed.
        call = ModelCall.objects.get(trial=trial)
        reader.join(30)
    assert call.status_code == 200 and call.usage_estimated and call.output_tokens > 0
    assert "command ended" in call.error


@pytest.mark.django_db(transaction=True)
def test_one_trial_filling_its_slots_does_not_starve_another(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    first, second = make_trial("gw-starve-1"), make_trial("gw-starve-2")
    chat = ScriptedChat(["a slow answer " * 40] * 3, api_key=REAL_KEY, event_delay=0.05)
    config = {"max_concurrency": 1, "request_timeout": 3}
    with (
        chat_server(chat),
        gateway_for_trial(first.pk, upstream(chat, **config)) as gw1,
        gateway_for_trial(second.pk, upstream(chat, **config)) as gw2,
        client(gw1) as http1,
        http1.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as holding,
    ):
        lines = holding.iter_lines()
        next(lines)  # the first trial's one slot is taken, its answer still streaming
        with client(gw2) as http2:
            assert http2.post("/v1/chat/completions", json=CHAT).status_code == 200
        # Still streaming while the other trial's call went through.
        assert any(line.startswith("data:") for line in itertools.islice(lines, 4))


@pytest.mark.django_db(transaction=True)
def test_a_key_in_a_response_header_or_across_byte_300_of_an_error_is_seen_nowhere(
    examples_imported, monkeypatch, admin_client_
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-key-leaks")
    # {"error": {"message": " is 23 bytes: the key starts at byte 288 and ends past byte 300.
    message = "x" * 258 + f"Bearer {REAL_KEY} was rejected"
    chat = ScriptedChat(["echoed"], api_key=REAL_KEY, echo_in_header=True, failures=[400], failure_message=message)
    seen = ""
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw, client(gw) as http:
        failed = http.post("/v1/chat/completions", json=CHAT)
        seen += failed.text + str(failed.headers)
        assert failed.status_code == 400
        answer = http.post("/v1/chat/completions", json=CHAT)
        seen += answer.text + str(answer.headers)
        with http.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as streamed:
            seen += streamed.read().decode() + str(streamed.headers)
        assert answer.status_code == 200 and "x-request-id" in answer.headers
    assert REAL_KEY not in seen and "[key removed by the gateway]" in answer.headers["x-request-id"]
    stored = " ".join(c.error for c in ModelCall.objects.filter(trial=trial))
    api = admin_client_.get(f"/api/evaluation/trials/{trial.pk}/").content.decode()
    for text in (stored, api):
        assert "xxxx" in text  # the error was stored
        assert REAL_KEY[:8] not in text, text  # and no part of the key, not even its start


def _peak_rss_kib() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")


@pytest.mark.django_db(transaction=True)
def test_idle_connections_and_huge_bodies_stay_within_the_thread_and_memory_bounds(
    examples_imported, monkeypatch, settings
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    trial = make_trial("gw-bounds")
    chat = ScriptedChat(["ok"] * 5, api_key=REAL_KEY)
    cap = settings.VERIHARM_GATEWAY_MAX_CONNECTIONS
    idle: list[socket.socket] = []
    try:
        with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw:
            threads_before = threading.active_count()
            for _ in range(3000):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(gw.socket_path))
                idle.append(sock)
            # Past the cap, a connection is answered 503 at once and closed, not queued.
            idle[-1].settimeout(10)
            refused = idle[-1].recv(65536)
            assert refused.startswith(b"HTTP/1.1 503") and b"connections open" in refused, refused
            threads = threading.active_count()
            proc_threads = int(next(x for x in open("/proc/self/status") if x.startswith("Threads:")).split()[1])
            # One pool thread per admitted connection at most; the rest were answered 503 and closed.
            assert threads - threads_before <= cap, (threads_before, threads)
            assert proc_threads <= threads + 8
            for sock in idle:
                sock.close()
            idle.clear()

            huge = b"{" + b" " * (31 * 1024 * 1024) + b"}"
            open("/proc/self/clear_refs", "w").write("5")  # peak RSS from here
            peak_before = _peak_rss_kib()
            statuses: list[int] = []

            def send_huge() -> None:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(30)
                    sock.connect(str(gw.socket_path))
                    sock.sendall(
                        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Length: %d\r\n\r\n" % len(huge)
                    )
                    try:
                        view = memoryview(huge)
                        for start in range(0, len(huge), 1 << 20):
                            sock.sendall(view[start : start + (1 << 20)])
                    except OSError:
                        pass  # refused on its Content-Length: the gateway stopped reading
                    data = sock.recv(65536)
                statuses.append(int(data.split()[1]) if data else 0)

            senders = [threading.Thread(target=send_huge) for _ in range(6)]
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join(60)
            grown_mib = (_peak_rss_kib() - peak_before) / 1024
            assert statuses == [413] * 6
            # Refused before any of the 6 x 31 MB were read: far below one body.
            assert grown_mib < 16, grown_mib
            with client(gw) as http:
                assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
    finally:
        for sock in idle:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
