"""A small OpenAI-compatible chat-completions server on loopback, scripted to issue bash commands.

It speaks the real wire protocol: POST /v1/chat/completions with `messages` and
`tools`, answered with `choices[0].message` carrying `tool_calls` whose
`function.arguments` is a JSON string. Every request is kept for the test to inspect.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedChat:
    """Each turn is a list of shell commands to call, or a str: the final answer."""

    def __init__(self, turns: list[list[str] | str], api_key: str = "") -> None:
        self.turns = list(turns)
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.base_url = ""

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = len(self.requests) - 1
        step = self.turns[turn] if turn < len(self.turns) else "done"
        if isinstance(step, str):
            message: dict[str, Any] = {"role": "assistant", "content": step}
            finish = "stop"
        else:
            message = {
                "role": "assistant",
                "content": None,
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
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _handler(chat: ScriptedChat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            if chat.api_key and self.headers.get("Authorization") != f"Bearer {chat.api_key}":
                self._send(401, {"error": {"message": "Incorrect API key provided"}})
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            chat.requests.append(body)
            chat.headers.append(dict(self.headers))
            self._send(200, chat.reply(body))

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
