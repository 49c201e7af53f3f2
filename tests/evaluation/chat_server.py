"""A small OpenAI-, Anthropic- and Gemini-compatible model server on loopback, scripted to issue shell commands.

It speaks the real wire protocols (`dialects.py` writes each): POST /v1/chat/completions, POST
/v1/responses (OpenAI, key as a bearer token), POST /v1/messages (Anthropic, key in x-api-key) and
POST /v1beta/models/<model>:generateContent / :streamGenerateContent?alt=sse (Gemini, key in
x-goog-api-key or ?key=; its base URL is `root_url`); each streamed as server-sent events when the
request asks for a stream, tool calls included, with usage where the real APIs put it. A turn's
commands are called with the shell tool the request declared (its name and argument shape), or
`bash` {command} when it declared none. `failures` are HTTP statuses answered, in order,
before any real answer (a 429 or 5xx the gateway should retry). Every request that
reached it is kept (body, headers, path) for the test to inspect.

Harnesses such as mini-swe-agent (through litellm) expect what a real model sends: some
reasoning text beside each tool call (`thought`), exactly one `bash` call per turn, and
the end of the work as a tool call too (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`);
`ScriptedChat.mini_swe_agent(commands)` scripts that conversation.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from demo.native.dialects import (
    Event,
    Turn,
    declared_tools,
    dialect_of,
    events,
    scripted_turn,
    shell_tool,
    whole,
)


class ScriptedChat:
    """Each turn is a list of shell commands to call, or a str: the final answer."""

    def __init__(
        self,
        turns: list[list[str] | str],
        api_key: str = "",
        *,
        usage: tuple[int, int] = (1, 1),
        failures: list[int] | None = None,
        echo_credentials: bool = False,
        delay: float = 0.0,
        thought: str | None = None,
        send_usage: bool = True,
        echo_in_header: bool = False,
        failure_message: str | None = None,
        event_delay: float = 0.0,
        responder: Callable[[dict[str, Any]], list[str] | str] | None = None,
        toolless_answer: str | None = None,
        never_stream: bool = False,
    ) -> None:
        self.turns = list(turns)
        # Answer plain JSON even where the request asked for a stream (a careless compatible server).
        self.never_stream = never_stream
        # When set, a request that declares no tools (OpenCode's title call beside its steps) gets
        # this text and leaves the script's turns to the requests that do.
        self.toolless_answer = toolless_answer
        # The script's turn each request was answered from (None: the tool-less answer).
        self.turn_of: list[int | None] = []
        # Answers each request from what it was sent (its body), in place of the turns: a server
        # that checks its prompt and answers as a model would (a proposer's or judge's JSON).
        self.responder = responder
        self.answers: list[list[str] | str] = []
        # Text sent beside tool calls (None: content null, as the bash-tool loop's models do).
        self.thought = thought
        self.api_key = api_key
        self.usage = usage
        self.failures = list(failures or [])
        # Answer with the credentials received in the text, as a careless upstream's error might.
        self.echo_credentials = echo_credentials
        # Put the Authorization received in x-request-id, as a careless upstream's tracing might.
        self.echo_in_header = echo_in_header
        # Answers without any usage (some compatible servers send none); streamed ones too.
        self.send_usage = send_usage
        # The text of the scripted failures' error message (default: "scripted failure <status>").
        self.failure_message = failure_message
        # Seconds between two streamed events.
        self.event_delay = event_delay
        self.requests: list[dict[str, Any]] = []
        # The bytes of each streamed answer as sent (as far as it got), in order.
        self.streamed: list[bytes] = []
        self.headers: list[Message] = []
        self.paths: list[str] = []
        # Every request that arrived, refused or answered: (path, status).
        self.arrivals: list[tuple[str, int]] = []
        self.base_url = ""
        self.lock = threading.Lock()
        # Seconds each answer takes, and how many requests were being answered at once at most.
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0

    @classmethod
    def mini_swe_agent(cls, commands: list[str], api_key: str = "", **options: Any) -> ScriptedChat:
        """One bash call a turn, then mini-swe-agent's submit command, each with reasoning text."""
        turns: list[list[str] | str] = [[command] for command in commands]
        turns.append(["echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"])
        return cls(turns, api_key, thought="Let me run the next command.", **options)

    def step(self) -> list[str] | str:
        if self.responder is not None:
            return self.answers[len(self.requests) - 1]
        turn = self.turn_of[-1]
        if turn is None:
            return self.toolless_answer or ""
        return self.turns[turn] if turn < len(self.turns) else "done"

    def text(self, headers: Message) -> str:
        step = self.step()
        text = step if isinstance(step, str) else "; ".join(step)
        if self.echo_credentials:
            text += (
                f" (you sent {headers.get('Authorization', '')} {headers.get('x-api-key', '')}"
                f"{headers.get('x-goog-api-key', '')})"
            )
        return text

    def turn(self, dialect: str, body: dict[str, Any], headers: Message, *, echo: bool = True) -> Turn:
        """This request's turn of the script, its calls made with the shell tool the request declared."""
        step = self.step()
        index = len(self.requests) - 1
        if isinstance(step, str):
            return Turn(self.text(headers) if echo else step)
        return scripted_turn(step, shell_tool(dialect, body), index=index, thought=self.thought)

    def whole(self, dialect: str, body: dict[str, Any], model: str, headers: Message) -> dict[str, Any]:
        # Chat completions answer the script's text as it is; the others with the echo, if asked.
        turn = self.turn(dialect, body, headers, echo=dialect != "chat")
        return whole(dialect, turn, model=model, usage=self.usage, index=len(self.requests) - 1)

    def events(self, dialect: str, body: dict[str, Any], model: str, headers: Message) -> list[Event]:
        """The answer as the real API streams it: several deltas, usage where that API reports it."""
        return events(
            dialect,
            self.turn(dialect, body, headers),
            model=model,
            usage=self.usage,
            index=len(self.requests) - 1,
            include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        )

    @property
    def root_url(self) -> str:
        """The server's root, as a Gemini upstream's base URL (its clients name the version)."""
        return self.base_url.removesuffix("/v1")


def prompt_text(body: dict[str, Any]) -> str:
    """Every message's text a request carried, in order (chat completions and messages send
    `messages`, responses `input`)."""
    turns = body.get("messages") or body.get("input") or []
    texts = []
    for turn in turns:
        content = turn.get("content") if isinstance(turn, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "\n".join(texts)


def _handler(chat: ScriptedChat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _echo(self) -> None:
            if chat.echo_in_header:
                self.send_header("x-request-id", f"req-1 {self.headers.get('Authorization', '')}")

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            if not chat.send_usage:
                payload.pop("usage", None)
                payload.pop("usageMetadata", None)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self._echo()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, events: list[Event]) -> None:
            self.send_response(200)
            self._echo()
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                self._events(events)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the gateway closed the stream (its client left, or it closed)
            self.close_connection = True

        def _events(self, events: list[Event]) -> None:
            sent = b""
            try:
                for event in events:
                    sent += self._event(event)
            finally:
                with chat.lock:
                    chat.streamed.append(sent)

        def _event(self, event: Event) -> bytes:
            if not chat.send_usage and isinstance(event, dict):
                event = {k: v for k, v in event.items() if k not in ("usage", "usageMetadata")}
                if isinstance(event.get("response"), dict):
                    event["response"] = {k: v for k, v in event["response"].items() if k != "usage"}
                if isinstance(event.get("message"), dict):
                    event["message"] = {k: v for k, v in event["message"].items() if k != "usage"}
            time.sleep(chat.event_delay)
            data = event if isinstance(event, str) else json.dumps(event)
            name = "" if isinstance(event, str) or "type" not in event else f"event: {event['type']}\n"
            frame = f"{name}data: {data}\n\n".encode()
            self.wfile.write(frame)
            self.wfile.flush()
            return frame

        def do_POST(self) -> None:
            body_bytes = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with chat.lock:
                chat.in_flight += 1
                chat.max_in_flight = max(chat.max_in_flight, chat.in_flight)
            time.sleep(chat.delay)
            with chat.lock:
                chat.in_flight -= 1
                status, events = self._serve(body_bytes)
                chat.arrivals.append((self.path, status))
            if events is not None:  # streamed outside the lock: other requests are answered meanwhile
                self._stream(events)

        def _serve(self, body_bytes: bytes) -> tuple[int, list[Event] | None]:
            path, _, query = self.path.partition("?")
            dialect = dialect_of(path)
            if dialect is None:
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return 404, None
            if dialect == "messages":
                given, wanted = self.headers.get("x-api-key"), chat.api_key
            elif dialect == "gemini":
                given, wanted = self.headers.get("x-goog-api-key") or parse_qs(query).get("key", [""])[0], chat.api_key
            else:
                given, wanted = self.headers.get("Authorization"), f"Bearer {chat.api_key}"
            if chat.api_key and given != wanted:
                self._send(401, {"error": {"message": "Incorrect API key provided"}})
                return 401, None
            if chat.failures:
                status = chat.failures.pop(0)
                self._send(status, {"error": {"message": chat.failure_message or f"scripted failure {status}"}})
                return status, None
            body = json.loads(body_bytes)
            chat.requests.append(body)
            chat.headers.append(self.headers)  # looked up case-insensitively, as HTTP headers are
            chat.paths.append(self.path)
            if chat.toolless_answer is not None and not declared_tools(dialect, body):
                chat.turn_of.append(None)
            else:
                chat.turn_of.append(sum(turn is not None for turn in chat.turn_of))
            if chat.responder is not None:
                chat.answers.append(chat.responder(body))
            if dialect == "gemini":
                model, _, method = path.removeprefix("/v1beta/models/").partition(":")
                streamed = method == "streamGenerateContent"
                if streamed and parse_qs(query).get("alt") != ["sse"]:
                    self._send(400, {"error": {"message": "the scripted server streams Gemini only as ?alt=sse"}})
                    return 400, None
            else:
                model, streamed = str(body.get("model", "")), bool(body.get("stream"))
            if streamed and not chat.never_stream:
                return 200, chat.events(dialect, body, model, self.headers)
            self._send(200, chat.whole(dialect, body, model, self.headers))
            return 200, None

    return Handler


@contextmanager
def chat_server(chat: ScriptedChat) -> Iterator[ScriptedChat]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(chat))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    chat.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield chat
    finally:
        server.shutdown()
        server.server_close()
