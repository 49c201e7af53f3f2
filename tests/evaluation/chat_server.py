"""A small OpenAI- and Anthropic-compatible model server on loopback, scripted to issue bash commands.

It speaks the real wire protocols: POST /v1/chat/completions with `messages` and
`tools`, answered with `choices[0].message` carrying `tool_calls` whose
`function.arguments` is a JSON string; POST /v1/responses (OpenAI responses) and
POST /v1/messages (Anthropic messages, key in x-api-key) with their own shapes; each
of the three streamed as server-sent events when the request says "stream": true,
with usage where the real APIs put it. `failures` are HTTP statuses answered, in order,
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
    ) -> None:
        self.turns = list(turns)
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
        turn = len(self.requests) - 1
        if self.responder is not None:
            return self.answers[turn]
        return self.turns[turn] if turn < len(self.turns) else "done"

    def text(self, headers: Message) -> str:
        step = self.step()
        text = step if isinstance(step, str) else "; ".join(step)
        if self.echo_credentials:
            text += f" (you sent {headers.get('Authorization', '')} {headers.get('x-api-key', '')})"
        return text

    def responses_reply(self, body: dict[str, Any], headers: Message) -> dict[str, Any]:
        return {
            "id": f"resp_{len(self.requests)}",
            "object": "response",
            "status": "completed",
            "model": body.get("model"),
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": self.text(headers)}],
                }
            ],
            "usage": {"input_tokens": self.usage[0], "output_tokens": self.usage[1], "total_tokens": sum(self.usage)},
        }

    def messages_reply(self, body: dict[str, Any], headers: Message) -> dict[str, Any]:
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [{"type": "text", "text": self.text(headers)}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": self.usage[0], "output_tokens": self.usage[1]},
        }

    def events(self, path: str, body: dict[str, Any], headers: Message) -> list[dict[str, Any] | str]:
        """The answer as the real API streams it: several deltas, usage where that API reports it."""
        text = self.text(headers)
        parts = [text[i : i + 5] for i in range(0, len(text), 5)] or [""]
        inp, out = self.usage
        if path == "/v1/chat/completions":
            chunks: list[dict[str, Any] | str] = [
                {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": p}}]}
                for p in parts
            ]
            if (body.get("stream_options") or {}).get("include_usage"):
                chunks.append(
                    {
                        "id": "c",
                        "object": "chat.completion.chunk",
                        "choices": [],
                        "usage": {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out},
                    }
                )
            return chunks + ["[DONE]"]
        if path == "/v1/responses":
            return (
                [{"type": "response.created", "response": {"id": "r"}}]
                + [{"type": "response.output_text.delta", "delta": p} for p in parts]
                + [{"type": "response.completed", "response": self.responses_reply(body, headers)}]
            )
        return (
            [{"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": inp, "output_tokens": 1}}}]
            + [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in parts]
            + [
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": out}},
                {"type": "message_stop"},
            ]
        )

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = len(self.requests) - 1
        step = self.step()
        if isinstance(step, str):
            message: dict[str, Any] = {"role": "assistant", "content": step}
            finish = "stop"
        else:
            message = {
                "role": "assistant",
                "content": self.thought,
                "tool_calls": [
                    {
                        "id": f"call_{turn}_{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                    }
                    for i, command in enumerate(step)
                ],
            }
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": self.usage[0],
                "completion_tokens": self.usage[1],
                "total_tokens": sum(self.usage),
            },
        }


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
            data = json.dumps(payload).encode()
            self.send_response(status)
            self._echo()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, events: list[dict[str, Any] | str]) -> None:
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

        def _events(self, events: list[dict[str, Any] | str]) -> None:
            for event in events:
                if not chat.send_usage and isinstance(event, dict):
                    event = {k: v for k, v in event.items() if k != "usage"}
                    if isinstance(event.get("response"), dict):
                        event["response"] = {k: v for k, v in event["response"].items() if k != "usage"}
                    if isinstance(event.get("message"), dict):
                        event["message"] = {k: v for k, v in event["message"].items() if k != "usage"}
                time.sleep(chat.event_delay)
                data = event if isinstance(event, str) else json.dumps(event)
                name = "" if isinstance(event, str) or "type" not in event else f"event: {event['type']}\n"
                self.wfile.write(f"{name}data: {data}\n\n".encode())
                self.wfile.flush()

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

        def _serve(self, body_bytes: bytes) -> tuple[int, list[dict[str, Any] | str] | None]:
            path = self.path.split("?")[0]
            if path not in ("/v1/chat/completions", "/v1/responses", "/v1/messages"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return 404, None
            given = self.headers.get("x-api-key") if path == "/v1/messages" else self.headers.get("Authorization")
            wanted = chat.api_key if path == "/v1/messages" else f"Bearer {chat.api_key}"
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
            if chat.responder is not None:
                chat.answers.append(chat.responder(body))
            headers = self.headers
            if body.get("stream"):
                return 200, chat.events(path, body, headers)
            if path == "/v1/responses":
                self._send(200, chat.responses_reply(body, headers))
            elif path == "/v1/messages":
                self._send(200, chat.messages_reply(body, headers))
            else:
                self._send(200, chat.reply(body))
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
