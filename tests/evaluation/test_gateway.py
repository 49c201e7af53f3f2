"""The model gateway on its Unix socket against the scripted upstream on loopback: what it forwards, what
it refuses, what it records, the budget, the limits and the retries, and the configuration checks."""

from __future__ import annotations

import json
import socket
import stat
import threading
from decimal import Decimal
from typing import Any

import httpx
import pytest

from candidates.models import Candidate
from evaluation.agents.factory import validate_config
from evaluation.gateway import Upstream, upstream_from_config
from evaluation.models import Agent, AgentKind, ModelCall, Run, Trial, TrialStatus
from evaluation.trials.model_access import gateway_for_trial
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.factories import AgentFactory, RunFactory, TrialFactory

SAFE_ID = "bb-319395/kimi-k2.5/gpt-5.5"
REAL_KEY = "sk-real-0123456789abcdef"
KEY_ENV = "VERIHARM_AGENT_KEY_GATEWAY_TEST"
PRICES = {"m": {"input": 2.5, "output": 10}}


def make_trial(name: str, *, budget: str | None = None, run: Run | None = None) -> Trial:
    config = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "prices": PRICES}
    agent = AgentFactory(name=name, kind=AgentKind.OPENAI_COMPATIBLE, model="m", config=config)
    run = run or RunFactory(budget_usd=Decimal(budget) if budget else None)
    run.agents.add(agent)
    candidate = Candidate.objects.get(external_id=SAFE_ID)
    return TrialFactory(run=run, candidate=candidate, agent=agent, status=TrialStatus.RUNNING)


def upstream(chat: ScriptedChat, api: str = "openai", **extra: Any) -> Upstream:
    return upstream_from_config(
        {"api": api, "base_url": chat.base_url, "api_key_env": KEY_ENV, "prices": PRICES, **extra}
    )


def client(gw) -> httpx.Client:
    # A harness in a sandbox would reach the socket bound at some path; it names the gateway as its host.
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket_path)), base_url="http://gateway", timeout=30)


def raw(gw, request: bytes) -> tuple[int, dict[str, Any]]:
    """Send bytes as they are (an absolute-form request line cannot be made with a normal client)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(gw.socket_path))
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.django_db(transaction=True)
def test_forwards_with_the_real_key_and_the_client_never_sees_it(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    # A proxy in the worker's environment must not be applied (it would swallow every request).
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    trial = make_trial("gw-forward")
    chat = ScriptedChat(["hello there", "second"], api_key=REAL_KEY, usage=(120, 30), echo_credentials=True)
    seen = b""
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw:
        assert stat.S_IMODE(gw.socket_dir.stat().st_mode) == 0o700
        with client(gw) as http:
            dummy = {
                "Authorization": "Bearer sk-dummy",
                "X-Api-Key": "sk-dummy-2",
                "Cookie": "session=abc",
                "Proxy-Authorization": "Basic eA==",
                "X-Secret": "whatever",
            }
            answer = http.post("/v1/chat/completions", json=CHAT, headers=dummy)
            seen += answer.content + str(answer.headers).encode()
            assert answer.status_code == 200
            assert answer.json()["choices"][0]["message"]["content"].startswith("hello there")
            answer = http.post("/v1/responses", json={"model": "m", "input": "hi"}, headers=dummy)
            seen += answer.content + str(answer.headers).encode()
            assert answer.status_code == 200 and answer.json()["usage"]["input_tokens"] == 120
        socket_path = gw.socket_path
    assert not socket_path.exists() and not socket_path.parent.exists()
    # The upstream saw the real key and none of what the client sent as credentials.
    assert [h["Authorization"] for h in chat.headers] == [f"Bearer {REAL_KEY}"] * 2
    for headers in chat.headers:
        names = {name.lower() for name in headers.keys()}
        assert names <= {
            "host",
            "accept",
            "accept-encoding",
            "connection",
            "user-agent",
            "content-length",
            "content-type",
            "authorization",
        }, names
        assert "dummy" not in str(headers) and "session=abc" not in str(headers)
    assert chat.paths == ["/v1/chat/completions", "/v1/responses"]
    # The upstream echoed what it received: the client got the echo with the key taken out.
    assert REAL_KEY.encode() not in seen and b"[key removed by the gateway]" in seen
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.route, c.model, c.status_code, c.input_tokens, c.output_tokens, c.retries) for c in calls] == [
        ("chat_completions", "m", 200, 120, 30, 0),
        ("responses", "m", 200, 120, 30, 0),
    ]
    # 120 x 2.5 + 30 x 10 USD per million tokens.
    assert [c.cost_usd for c in calls] == [Decimal("0.0006")] * 2 and all(c.latency > 0 for c in calls)


@pytest.mark.django_db(transaction=True)
def test_anthropic_messages_get_x_api_key_and_stream_with_their_usage(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-anthropic")
    chat = ScriptedChat(["a streamed answer of some length", "whole"], api_key=REAL_KEY, usage=(300, 45))
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat, "anthropic")) as gw, client(gw) as http:
        body = {"model": "m", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with http.stream(
            "POST", "/v1/messages", json=body, headers={"x-api-key": "dummy", "anthropic-version": "2023-06-01"}
        ) as answer:
            assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
            pieces = list(answer.iter_lines())
        text = "".join(
            json.loads(line[5:])["delta"]["text"]
            for line in pieces
            if line.startswith("data:") and "text_delta" in line
        )
        assert text == "a streamed answer of some length"
        assert http.post("/v1/messages", json={**body, "stream": False}).json()["usage"]["output_tokens"] == 45
    assert [h["x-api-key"] for h in chat.headers] == [REAL_KEY] * 2
    assert all("Authorization" not in h for h in chat.headers)
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.route, c.streamed, c.input_tokens, c.output_tokens) for c in calls] == [
        ("messages", True, 300, 45),
        ("messages", False, 300, 45),
    ]


@pytest.mark.django_db(transaction=True)
def test_openai_streams_pass_through_and_are_counted(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-stream")
    chat = ScriptedChat(["streamed chat text", "streamed responses text"], api_key=REAL_KEY, usage=(77, 11))
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw, client(gw) as http:
        with http.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as answer:
            lines = [line for line in answer.iter_lines() if line.startswith("data:")]
        assert lines[-1] == "data: [DONE]"
        deltas = [json.loads(line[5:]) for line in lines[:-1]]
        text = "".join(d["choices"][0]["delta"].get("content", "") for d in deltas if d["choices"])
        assert text == "streamed chat text"
        with http.stream("POST", "/v1/responses", json={"model": "m", "input": "x", "stream": True}) as answer:
            events = [json.loads(line[5:]) for line in answer.iter_lines() if line.startswith("data:")]
        assert events[-1]["type"] == "response.completed"
    # The gateway asked for the usage chunk the client did not ask for.
    assert chat.requests[0]["stream_options"] == {"include_usage": True}
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.route, c.streamed, c.input_tokens, c.output_tokens, c.usage_reported) for c in calls] == [
        ("chat_completions", True, 77, 11, True),
        ("responses", True, 77, 11, True),
    ]


@pytest.mark.django_db(transaction=True)
def test_refuses_other_routes_methods_and_hosts(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-refuse")
    chat = ScriptedChat(["never"], api_key=REAL_KEY)
    body = json.dumps(CHAT).encode()
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw:
        upstream_host = chat.base_url.split("/")[2]
        cases = [
            (b"POST http://evil.example/v1/chat/completions HTTP/1.1\r\nHost: evil.example\r\n", 400, "names a host"),
            (
                f"POST http://{upstream_host}/v1/chat/completions HTTP/1.1\r\nHost: gateway\r\n".encode(),
                400,
                "names a host",
            ),
            (b"POST /v1/chat/completions HTTP/1.1\r\nHost: api.openai.com\r\n", 421, "names another upstream"),
            (b"POST /v1/chat/completions HTTP/1.1\r\nHost: evil.example:443\r\n", 421, "names another upstream"),
            (b"GET /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\n", 405, "POST only"),
            (b"DELETE /v1/responses HTTP/1.1\r\nHost: gateway\r\n", 405, "POST only"),
            (b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n", 400, "names a host"),
            (b"POST /v1/models HTTP/1.1\r\nHost: gateway\r\n", 405, "GET only"),  # answered by the gateway
            (b"POST /v1/embeddings HTTP/1.1\r\nHost: gateway\r\n", 404, "serves only"),
            (b"POST /v1/messages HTTP/1.1\r\nHost: gateway\r\n", 404, "serves only"),  # not this flavour
            (b"POST /v1/chat/completions/../../admin HTTP/1.1\r\nHost: gateway\r\n", 404, "serves only"),
            (
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: chunked\r\n",
                411,
                "Content-Length",
            ),
        ]
        for head, status, message in cases:
            got, payload = raw(gw, head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
            assert got == status, (head, payload)
            assert message in payload["error"]["message"], (head, payload)
        got, payload = raw(
            gw,
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Length: 5\r\n"
            b"Connection: close\r\n\r\nnope!",
        )
        assert got == 400 and "JSON object" in payload["error"]["message"]
    assert chat.arrivals == []  # nothing was forwarded
    assert not ModelCall.objects.filter(trial=trial).exists()  # nor recorded as a model call


@pytest.mark.django_db(transaction=True)
def test_retries_on_429_and_5xx_are_counted_and_bounded(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-retry")
    chat = ScriptedChat(["fine", "unused"], api_key=REAL_KEY, failures=[429, 503])
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat, max_retries=2)) as gw, client(gw) as http:
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
        chat.failures = [500, 502, 529, 500]
        answer = http.post("/v1/chat/completions", json=CHAT)
        assert answer.status_code == 529 and "scripted failure 529" in answer.text  # the upstream's last word
    assert [status for _, status in chat.arrivals] == [429, 503, 200, 500, 502, 529]
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.status_code, c.retries) for c in calls] == [(200, 2), (529, 2)]
    assert calls[1].cost_usd == 0 and "scripted failure 529" in calls[1].error


@pytest.mark.django_db(transaction=True)
def test_budget_stops_new_calls_of_concurrent_trials_within_the_calls_in_flight(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    first = make_trial("gw-budget-1", budget="0.002")
    second = make_trial("gw-budget-2", run=first.run)
    # Each call: 100 x 2.5 + 20 x 10 per million = 0.00045 USD; the budget allows 4.44 of them.
    per_call = Decimal("0.00045")
    chat = ScriptedChat(["ok"] * 100, api_key=REAL_KEY, usage=(100, 20), delay=0.05)
    refusals: dict[int, list[dict]] = {first.pk: [], second.pk: []}

    def spend(gw, trial_id: int) -> None:
        with client(gw) as http:
            for _ in range(30):
                answer = http.post("/v1/chat/completions", json=CHAT)
                if answer.status_code == 429:
                    refusals[trial_id].append(answer.json())
                    if len(refusals[trial_id]) == 2:
                        return
                else:
                    assert answer.status_code == 200

    with (
        chat_server(chat),
        gateway_for_trial(first.pk, upstream(chat)) as gw1,
        gateway_for_trial(second.pk, upstream(chat)) as gw2,
    ):
        threads = [
            threading.Thread(target=spend, args=(gw1, first.pk)),
            threading.Thread(target=spend, args=(gw2, second.pk)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert gw1.budget_refusals == 2 and gw2.budget_refusals == 2
    for answers in refusals.values():
        assert len(answers) == 2 and all(a["error"]["type"] == "budget_exhausted" for a in answers)
        assert "budget of $0.0020 is spent" in answers[0]["error"]["message"]
    calls = ModelCall.objects.filter(trial__run=first.run)
    spent = sum(c.cost_usd for c in calls)
    # Reached, and overshot by at most the calls in flight at the crossing: one per trial here.
    assert Decimal("0.002") <= spent <= Decimal("0.002") + 2 * per_call
    assert len(chat.requests) == calls.count()  # every forwarded call is recorded, no refused one forwarded


@pytest.mark.django_db(transaction=True)
def test_concurrency_and_rate_limits_per_endpoint(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-limits")
    chat = ScriptedChat(["ok"] * 10, api_key=REAL_KEY, delay=0.2)
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat, max_concurrency=1)) as gw:
        statuses: list[int] = []

        def call() -> None:
            with client(gw) as http:
                statuses.append(http.post("/v1/chat/completions", json=CHAT).status_code)

        threads = [threading.Thread(target=call) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert statuses == [200, 200, 200] and chat.max_in_flight == 1
    limited = ScriptedChat(["ok"] * 10, api_key=REAL_KEY)
    config = {"requests_per_minute": 2, "request_timeout": 2}
    with chat_server(limited), gateway_for_trial(trial.pk, upstream(limited, **config)) as gw, client(gw) as http:
        assert [http.post("/v1/chat/completions", json=CHAT).status_code for _ in range(2)] == [200, 200]
        third = http.post("/v1/chat/completions", json=CHAT)
        assert third.status_code == 429 and "2 requests per minute" in third.json()["error"]["message"]
    assert len(limited.requests) == 2


@pytest.mark.django_db(transaction=True)
def test_a_key_variable_outside_the_prefix_is_never_read_even_when_pinned(examples_imported, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-site-secret")
    trial = make_trial("gw-pinned")
    chat = ScriptedChat(["never"])
    with chat_server(chat):
        # As if written into a pinned configuration before the checks existed.
        pinned = Upstream(api="openai", base_url=chat.base_url, api_key_env="DJANGO_SECRET_KEY")
        with gateway_for_trial(trial.pk, pinned) as gw, client(gw) as http:
            answer = http.post("/v1/chat/completions", json=CHAT)
    assert answer.status_code == 500 and "VERIHARM_AGENT_KEY_" in answer.json()["error"]["message"]
    assert "the-site-secret" not in answer.text and chat.arrivals == []


def test_configuration_checks_name_what_is_wrong():
    good = {
        "base_url": "https://api.example.com/v1",
        "model": "m",
        "api_key_env": "VERIHARM_AGENT_KEY_OPENAI",
        "prices": {"m": {"input": 3, "output": 15}},
        "max_concurrency": 4,
        "requests_per_minute": 60,
    }
    validate_config("openai_compatible", good)
    validate_config(
        "command",
        {
            "command": "mini {task_file}",
            "gateway": {
                "api": "anthropic",
                "base_url": "https://api.anthropic.com/v1",
                "api_key_env": "VERIHARM_AGENT_KEY_ANTHROPIC",
            },
        },
    )
    gemini = {"api": "gemini", "base_url": "https://generativelanguage.googleapis.com/", "max_calls": 40}
    assert upstream_from_config(gemini).base_url == "https://generativelanguage.googleapis.com"
    assert upstream_from_config(gemini).max_calls == 40
    for kind, config, message in [
        ("openai_compatible", {**good, "api_key_env": "DJANGO_SECRET_KEY"}, "VERIHARM_AGENT_KEY_"),
        ("openai_compatible", {**good, "api_key_env": "DATABASE_URL"}, "VERIHARM_AGENT_KEY_"),
        ("openai_compatible", {**good, "api_key_env": "VERIHARM_AGENT_KEY_x-y"}, "A-Z"),
        ("openai_compatible", {**good, "base_url": "ftp://api.example.com/v1"}, "http or https"),
        ("openai_compatible", {**good, "base_url": "file:///etc/passwd"}, "http or https"),
        ("openai_compatible", {**good, "base_url": "https://user:pw@api.example.com/v1"}, "credentials"),
        ("openai_compatible", {**good, "base_url": "http:///v1"}, "no host"),
        ("openai_compatible", {**good, "base_url": "https://api.example.com/v1?key=x"}, "query"),
        ("openai_compatible", {**good, "api": "anthropic"}, "speaks the openai API"),
        ("openai_compatible", {**good, "prices": {"m": {"input": -1, "output": 1}}}, "non-negative"),
        ("openai_compatible", {**good, "prices": {"m": {"input": 1}}}, "prices"),
        ("openai_compatible", {**good, "max_concurrency": 0}, "max_concurrency"),
        ("command", {"command": "x {task_file}", "gateway": {"base_url": "https://a.example/v1"}}, "API flavour"),
        (
            "command",
            {"command": "x {task_file}", "gateway": {"api": "bedrock", "base_url": "https://a.example/v1"}},
            "api must be one of",
        ),
        (
            "command",
            {"command": "x {task_file}", "gateway": {"api": "gemini", "base_url": "https://a.example/v1beta"}},
            "root without a version",
        ),
        (
            "command",
            {"command": "x {task_file}", "gateway": {"api": "gemini", "base_url": "https://a.example/v1"}},
            "root without a version",
        ),
        ("openai_compatible", {**good, "max_calls": 0}, "max_calls"),
        (
            "harness",
            {"harness": "mini-swe-agent", "model": "m", "gateway": {"api": "gemini", "base_url": "https://a.example"}},
            "not 'gemini'",
        ),
        (
            "command",
            {
                "command": "x {task_file}",
                "gateway": {"api": "openai", "base_url": "https://a.example/v1", "api_key_env": "HOME"},
            },
            "VERIHARM_AGENT_KEY_",
        ),
    ]:
        with pytest.raises(ValueError, match=message):
            validate_config(kind, config)


@pytest.mark.django_db
def test_the_admin_form_refuses_a_bad_key_variable_and_says_why(admin_user):
    from django.test import Client

    browser = Client()
    browser.force_login(admin_user)
    answer = browser.post(
        "/admin/evaluation/agent/add/",
        {
            "name": "leaky",
            "kind": "openai_compatible",
            "model": "m",
            "harness": "",
            "time_limit": 600,
            "active": "on",
            "config": json.dumps(
                {"base_url": "https://api.example.com/v1", "model": "m", "api_key_env": "DJANGO_SECRET_KEY"}
            ),
        },
    )
    assert (
        answer.status_code == 200
        and "must name a variable starting with VERIHARM_AGENT_KEY_" in answer.content.decode()
    )
    assert not Agent.objects.filter(name="leaky").exists()


@pytest.mark.django_db(transaction=True)
def test_a_client_leaving_mid_stream_frees_its_slot_and_the_call_is_recorded(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-leave")
    chat = ScriptedChat(["a long streamed answer " * 200, "next"], api_key=REAL_KEY, usage=(10, 5))
    config = {"max_concurrency": 1, "request_timeout": 3}
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat, **config)) as gw:
        with client(gw) as http, http.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as answer:
            assert next(answer.iter_lines()).startswith("data:")  # then the client goes away
        with client(gw) as http:
            # With its one slot still held, this call would wait out its 3 s and be refused.
            assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.streamed, c.status_code) for c in calls] == [(True, 200), (False, 200)]


@pytest.mark.django_db(transaction=True)
def test_the_socket_directory_setting_places_every_trials_socket(examples_imported, monkeypatch, settings):
    # A worker in a container shares this path with the Docker engine's host. A short path:
    # a Unix socket's path may not exceed 107 bytes, and pytest's tmp_path can.
    import tempfile
    from pathlib import Path

    tmp_path = Path(tempfile.mkdtemp(prefix="gw", dir="/tmp"))
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    settings.VERIHARM_GATEWAY_SOCKET_DIR = str(tmp_path / "gateways")
    trial = make_trial("gw-socket-dir")
    chat = ScriptedChat(["placed"], api_key=REAL_KEY)
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat)) as gw:
        assert gw.socket_dir.parent == tmp_path / "gateways" and gw.socket_path.is_socket()
        with client(gw) as http:
            assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
    assert list((tmp_path / "gateways").iterdir()) == []  # the trial's own directory goes with it
