"""The model gateway in the four dialects the native coding-agent CLIs speak, on its real socket server
against the scripted upstream: Gemini's routes, key and usage; streamed tool calls passed byte for
byte and counted; the requests a harness makes besides its model calls, answered by the gateway and
recorded; the per-trial call cap; and who retries a failing call."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
import pytest

from evaluation.agents.factory import HARNESS_CALLS_PER_STEP, harness_upstream
from evaluation.agents.openai_compatible import EndpointConfig
from evaluation.gateway import Gateway, serve
from evaluation.gateway.ledger import CallRecord, Reservation
from evaluation.models import ModelCall
from evaluation.trials.model_access import gateway_for_trial
from tests.evaluation.chat_server import ScriptedChat, chat_server
from tests.evaluation.test_gateway import CHAT, KEY_ENV, PRICES, REAL_KEY, client, make_trial, raw, upstream

GEMINI_TOOLS = [
    {
        "functionDeclarations": [
            {"name": "read_file", "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}}},
            {
                "name": "run_shell_command",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {"command": {"type": "STRING"}},
                    "required": ["command"],
                },
            },
        ]
    }
]
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "list the files"}]}], "tools": GEMINI_TOOLS}

# Each dialect's request with the shell tool its CLI declares, and the arguments the call must carry.
STREAMED: dict[str, tuple[str, str, dict[str, Any], str, dict[str, Any]]] = {
    "chat": (
        "openai",
        "/v1/chat/completions",
        {
            **CHAT,
            "stream": True,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "parameters": {
                            "type": "object",
                            "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
                            "required": ["command", "description"],
                        },
                    },
                }
            ],
        },
        "bash",
        {"command": "ls -la", "description": "Run the scripted command"},
    ),
    "responses": (
        "openai",
        "/v1/responses",
        {
            "model": "m",
            "input": "list the files",
            "stream": True,
            "tools": [
                {
                    "type": "function",
                    "name": "shell",
                    "parameters": {
                        "type": "object",
                        "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                        "required": ["command"],
                    },
                }
            ],
        },
        "shell",
        {"command": ["bash", "-lc", "ls -la"]},
    ),
    "messages": (
        "anthropic",
        "/v1/messages?beta=true",
        {
            "model": "m",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "list the files"}],
            "tools": [
                {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
                {
                    "name": "Bash",
                    "input_schema": {
                        "type": "object",
                        "properties": {"command": {"type": "string"}},
                        "required": ["command"],
                    },
                },
            ],
        },
        "Bash",
        {"command": "ls -la"},
    ),
    "gemini": (
        "gemini",
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        GEMINI_BODY,
        "run_shell_command",
        {"command": "ls -la"},
    ),
}


def gateway_upstream(chat: ScriptedChat, api: str, **extra: Any):
    if api == "gemini":
        extra = {"base_url": chat.root_url, **extra}
    return upstream(chat, api, **extra)


def sse_data(stream: bytes) -> list[Any]:
    """Every event's data of a server-sent stream, parsed ([DONE] left out)."""
    found = []
    for event in stream.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
        if data and data != b"[DONE]":
            found.append(json.loads(data))
    return found


def streamed_tool_call(dialect: str, stream: bytes) -> tuple[str, dict[str, Any]]:
    """The one tool call of a streamed answer, put back together as its client would."""
    events = sse_data(stream)
    if dialect == "chat":
        pieces = [c["delta"]["tool_calls"][0] for e in events for c in e["choices"] if "tool_calls" in c["delta"]]
        return pieces[0]["function"]["name"], json.loads("".join(p["function"]["arguments"] for p in pieces))
    if dialect == "responses":
        added = next(
            e["item"]
            for e in events
            if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
        )
        deltas = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
        done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
        assert done["arguments"] == deltas and events[-1]["type"] == "response.completed"
        return added["name"], json.loads(deltas)
    if dialect == "messages":
        start = next(
            e for e in events if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"
        )
        parts = [e["delta"]["partial_json"] for e in events if e.get("delta", {}).get("type") == "input_json_delta"]
        assert any(e["type"] == "message_delta" and e["delta"]["stop_reason"] == "tool_use" for e in events)
        return start["content_block"]["name"], json.loads("".join(parts))
    last = events[-1]["candidates"][0]
    assert last["finishReason"] == "STOP"
    call = next(p["functionCall"] for p in last["content"]["parts"] if "functionCall" in p)
    return call["name"], call["args"]


@pytest.mark.django_db(transaction=True)
def test_gemini_calls_go_upstream_with_the_real_key_and_are_counted_by_the_model_in_their_path(
    examples_imported, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-gemini")
    chat = ScriptedChat(["a whole answer", "a streamed answer"], api_key=REAL_KEY, usage=(64, 9), echo_credentials=True)
    seen = b""
    with chat_server(chat), gateway_for_trial(trial.pk, gateway_upstream(chat, "gemini")) as gw, client(gw) as http:
        dummy = {"x-goog-api-key": "dummy-gemini-key", "Authorization": "Bearer sk-dummy"}
        answer = http.post("/v1beta/models/m:generateContent?key=dummy-in-query", json=GEMINI_BODY, headers=dummy)
        seen += answer.content + str(answer.headers).encode()
        assert answer.status_code == 200, answer.text
        assert answer.json()["candidates"][0]["content"]["parts"][0]["text"].startswith("a whole answer")
        with http.stream(
            "POST", "/v1beta/models/m:streamGenerateContent?alt=sse&key=dummy", json=GEMINI_BODY, headers=dummy
        ) as streamed:
            assert streamed.headers["content-type"].startswith("text/event-stream")
            body = b"".join(streamed.iter_raw())
        seen += body
    text = "".join(part.get("text", "") for e in sse_data(body) for part in e["candidates"][0]["content"]["parts"])
    assert text.startswith("a streamed answer")
    # The upstream got the real key in x-goog-api-key, the version in the path, alt=sse, and no dummy key.
    assert [h["x-goog-api-key"] for h in chat.headers] == [REAL_KEY] * 2
    assert all("Authorization" not in h for h in chat.headers)
    assert chat.paths == ["/v1beta/models/m:generateContent", "/v1beta/models/m:streamGenerateContent?alt=sse"]
    assert REAL_KEY.encode() not in seen and b"[key removed by the gateway]" in seen
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.route, c.model, c.streamed, c.input_tokens, c.output_tokens, c.usage_estimated) for c in calls] == [
        ("generate_content", "m", False, 64, 9, False),
        ("stream_generate_content", "m", True, 64, 9, False),
    ]
    # 64 x 2.5 + 9 x 10 USD per million tokens.
    assert [c.cost_usd for c in calls] == [Decimal("0.00025")] * 2


@pytest.mark.django_db(transaction=True)
def test_query_strings_are_taken_only_where_the_flavours_clients_send_them(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-queries")
    chat = ScriptedChat(["never"], api_key=REAL_KEY)
    body = json.dumps(GEMINI_BODY).encode()
    cases = {
        "gemini": [
            (b"POST /v1beta/models/m:streamGenerateContent HTTP/1.1", 400, "needs ?alt=sse"),
            (b"POST /v1beta/models/m:streamGenerateContent?alt=json HTTP/1.1", 400, "must be sse"),
            (b"POST /v1beta/models/m:generateContent?alt=sse HTTP/1.1", 400, "must be json"),
            (b"POST /v1beta/models/m:generateContent?fields=x HTTP/1.1", 400, "not 'fields'"),
            (b"POST /v1beta/models/m:generateContent?key=a&key=b HTTP/1.1", 400, "given twice"),
            (b"POST /v1beta/models/m:embedContent HTTP/1.1", 404, "serves only"),
            (b"POST /v1beta/models/..%2Fx:generateContent HTTP/1.1", 404, "serves only"),
            (b"POST /v1/models/m:generateContent HTTP/1.1", 404, "serves only"),
            (b"GET /v1beta/models/m:generateContent HTTP/1.1", 405, "POST only"),
        ],
        "openai": [(b"POST /v1/chat/completions?api-version=1 HTTP/1.1", 400, "takes no query string")],
        "anthropic": [(b"POST /v1/messages?beta=false HTTP/1.1", 400, "must be true")],
    }
    for api, requests in cases.items():
        with chat_server(chat), gateway_for_trial(trial.pk, gateway_upstream(chat, api)) as gw:
            for line, status, message in requests:
                head = line + b"\r\nHost: gateway\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
                got, payload = raw(gw, head + body)
                assert got == status, (line, payload)
                assert message in payload["error"]["message"], (line, payload)
                if api == "gemini":  # Google's own error shape, so the CLI shows the message
                    assert payload["error"]["code"] == status and payload["error"]["status"]
    assert chat.arrivals == [] and not ModelCall.objects.filter(trial=trial).exists()


@pytest.mark.parametrize("dialect", list(STREAMED))
@pytest.mark.django_db(transaction=True)
def test_a_streamed_tool_call_passes_byte_for_byte_and_is_counted_in_each_dialect(
    dialect, examples_imported, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    api, path, body, tool, arguments = STREAMED[dialect]
    trial = make_trial(f"gw-stream-{dialect}")
    chat = ScriptedChat([["ls -la"]], api_key=REAL_KEY, usage=(41, 7), thought="Listing the files first.")
    with chat_server(chat), gateway_for_trial(trial.pk, gateway_upstream(chat, api)) as gw, client(gw) as http:
        with http.stream("POST", path, json=body) as answer:
            assert answer.status_code == 200
            got = b"".join(answer.iter_raw())
    assert got == chat.streamed[0]  # what the upstream sent, untouched
    assert streamed_tool_call(dialect, got) == (tool, arguments)
    call = ModelCall.objects.get(trial=trial)
    assert (call.streamed, call.input_tokens, call.output_tokens, call.usage_reported, call.usage_estimated) == (
        True,
        41,
        7,
        True,
        False,
    )


class RecordingLedger:
    """A ledger that keeps what it was asked: the amounts reserved and the calls settled."""

    def __init__(self) -> None:
        self.reserved: list[Decimal] = []
        self.settled: list[CallRecord] = []

    @property
    def budget_usd(self) -> Decimal | None:
        return Decimal(100)

    def reserve(self, amount_usd: Decimal, hold_seconds: float) -> Reservation:
        self.reserved.append(amount_usd)
        return Reservation(len(self.reserved), amount_usd)

    def settle(self, reservation: Reservation | None, call: CallRecord) -> None:
        self.settled.append(call)

    def release_all(self) -> None:
        pass


def test_a_gemini_calls_budget_reservation_is_bound_by_its_max_output_tokens(monkeypatch, settings):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    chat = ScriptedChat(["one", "two"], api_key=REAL_KEY, usage=(10, 2))
    ledger = RecordingLedger()
    bounded = {**GEMINI_BODY, "generationConfig": {"maxOutputTokens": 50}}
    with chat_server(chat), serve(Gateway(gateway_upstream(chat, "gemini"), ledger=ledger)) as gw, client(gw) as http:
        for sent in (bounded, GEMINI_BODY):
            answer = http.post("/v1beta/models/m:generateContent", content=json.dumps(sent).encode())
            assert answer.status_code == 200
        bad = {**GEMINI_BODY, "generationConfig": {"maxOutputTokens": "lots"}}
        refused = http.post("/v1beta/models/m:generateContent", json=bad)
        assert refused.status_code == 400 and "generationConfig.maxOutputTokens" in refused.json()["error"]["message"]
    price = PRICES["m"]
    sizes = [len(json.dumps(bounded).encode()), len(json.dumps(GEMINI_BODY).encode())]
    output_bounds = [50, settings.VERIHARM_GATEWAY_CALL_OUTPUT_TOKENS]
    assert ledger.reserved == [
        (Decimal(str(price["input"])) * size + Decimal(str(price["output"])) * bound) / Decimal(1_000_000)
        for size, bound in zip(sizes, output_bounds, strict=True)
    ]
    assert len(chat.requests) == 2 and [c.route for c in ledger.settled] == ["generate_content"] * 2


@pytest.mark.django_db(transaction=True)
def test_the_requests_beside_the_model_calls_are_answered_by_the_gateway_and_recorded(examples_imported, monkeypatch):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-auxiliary")
    chat = ScriptedChat(["never"], api_key=REAL_KEY)
    count_body = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}], "system": "y" * 40}
    with chat_server(chat):
        anthropic = gateway_upstream(chat, "anthropic")
        with gateway_for_trial(trial.pk, anthropic, models=("claude-x",)) as gw, client(gw) as http:
            hello = http.head("/api/hello")
            assert hello.status_code == 200 and hello.content == b""
            listed = http.get("/v1/models").json()
            assert [m["id"] for m in listed["data"]] == ["claude-x", "m"] and listed["has_more"] is False
            counted = http.post("/v1/messages/count_tokens?beta=true", json=count_body)
            # The gateway's own estimate: the body's 445 characters of strings (the texts, the role and
            # the model's name) at four a token.
            assert counted.status_code == 200 and counted.json() == {"input_tokens": 112}
            assert http.get("/api/hello").status_code == 405
            assert http.post("/v1/complete", json=CHAT).status_code == 404
        with gateway_for_trial(trial.pk, gateway_upstream(chat, "openai"), models=("gpt-x",)) as gw, client(gw) as http:
            assert [m["id"] for m in http.get("/v1/models").json()["data"]] == ["gpt-x", "m"]
            assert http.head("/api/hello").status_code == 404  # not a route of this flavour
        with gateway_for_trial(trial.pk, gateway_upstream(chat, "gemini")) as gw, client(gw) as http:
            listed = http.get("/v1beta/models?key=dummy").json()
            assert [m["name"] for m in listed["models"]] == ["models/m"]
            counted = http.post("/v1beta/models/m:countTokens", json={"contents": [{"parts": [{"text": "z" * 80}]}]})
            assert counted.json() == {"totalTokens": 20}
    assert chat.arrivals == []  # nothing was forwarded
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.route, c.model, c.status_code, c.cost_usd, c.input_tokens) for c in calls] == [
        ("hello", "", 200, 0, 0),
        ("models", "", 200, 0, 0),
        ("count_tokens", "m", 200, 0, 0),
        ("models", "", 200, 0, 0),
        ("models", "", 200, 0, 0),
        ("count_tokens", "m", 200, 0, 0),
    ]
    assert not any(c.gateway_failure for c in calls)


@pytest.mark.django_db(transaction=True)
def test_a_harness_looping_on_its_model_is_refused_past_the_call_cap_and_the_gateway_says_so(
    examples_imported, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-cap")
    chat = ScriptedChat(["again"] * 20, api_key=REAL_KEY)
    with chat_server(chat), gateway_for_trial(trial.pk, upstream(chat, max_calls=4)) as gw, client(gw) as http:
        statuses = [http.post("/v1/chat/completions", json=CHAT).status_code for _ in range(2)]
        statuses.append(http.get("/v1/models").status_code)
        answers = [http.post("/v1/chat/completions", json=CHAT) for _ in range(7)]
        statuses += [a.status_code for a in answers]
        assert "takes at most 4 calls" in answers[-1].json()["error"]["message"]
        assert gw.limit_hit == "the harness made more than 4 model calls"
        assert gw.calls_refused_over_cap == 6
    assert statuses == [200, 200, 200, 200] + [403] * 6
    assert len(chat.requests) == 3
    # Each call in the cap, and the first refusal past it; the rest are counted, not written.
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.route, c.status_code) for c in calls] == [
        ("chat_completions", 200),
        ("chat_completions", 200),
        ("models", 200),
        ("chat_completions", 200),
        ("chat_completions", 403),
    ]
    assert "takes at most 4 calls" in calls[-1].error and not calls[-1].gateway_failure


@pytest.mark.django_db(transaction=True)
def test_a_harness_agents_failing_call_reaches_the_upstream_once_per_harness_attempt(examples_imported, monkeypatch):
    """Every CLI retries a failed call itself: the gateway does not multiply those retries for a
    harness, and records each attempt; the built-in chat loop, which does not retry, keeps the
    gateway's retries."""
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    trial = make_trial("gw-harness-retries")
    chat = ScriptedChat(["never"], api_key=REAL_KEY, failures=[503] * 20)
    with chat_server(chat):
        harness = harness_upstream(
            {
                "harness": "mini-swe-agent",
                "model": "m",
                "step_limit": 7,
                "gateway": {"api": "openai", "base_url": chat.base_url, "api_key_env": KEY_ENV, "prices": PRICES},
            }
        )
        assert (harness.max_retries, harness.max_calls) == (0, 7 * HARNESS_CALLS_PER_STEP)
        with gateway_for_trial(trial.pk, harness) as gw, client(gw) as http:
            # Three attempts, as a CLI retrying twice would make them.
            assert [http.post("/v1/chat/completions", json=CHAT).status_code for _ in range(3)] == [503] * 3
        assert len(chat.arrivals) == 3
        loop = EndpointConfig.from_config(
            {"base_url": chat.base_url, "model": "m", "api_key_env": KEY_ENV, "prices": PRICES}
        ).upstream()
        with gateway_for_trial(trial.pk, loop) as gw, client(gw) as http:
            assert http.post("/v1/chat/completions", json=CHAT).status_code == 503
    assert len(chat.arrivals) == 3 + 1 + 3  # the loop's one call: its first try and three retries
    calls = list(ModelCall.objects.filter(trial=trial).order_by("pk"))
    assert [(c.status_code, c.retries) for c in calls] == [(503, 0)] * 3 + [(503, 3)]
    # A harness's gateway block may still ask for the gateway's retries, and its own cap.
    chosen = harness_upstream(
        {
            "harness": "mini-swe-agent",
            "model": "m",
            "gateway": {"api": "openai", "base_url": "https://a.example/v1", "max_retries": 2, "max_calls": 9},
        }
    )
    assert (chosen.max_retries, chosen.max_calls) == (2, 9)


def test_the_scripted_upstream_answers_a_tool_less_request_apart_from_its_turns():
    """OpenCode's first call of a run asks for a title, with no tools: it must not take the script's
    first command."""
    chat = ScriptedChat([["ls"], "Done."], toolless_answer="A title")
    tools = STREAMED["chat"][2]["tools"]
    with chat_server(chat), httpx.Client(base_url=chat.base_url, timeout=10) as http:
        replies = [
            http.post("/chat/completions", json={**CHAT, **extra}).json()["choices"][0]["message"]
            for extra in ({}, {"tools": tools}, {}, {"tools": tools})
        ]
    assert [r["content"] for r in replies] == ["A title", None, "A title", "Done."]
    assert json.loads(replies[1]["tool_calls"][0]["function"]["arguments"])["command"] == "ls"
