"""The gateway as an HTTP/1.1 server on a Unix socket, one per trial attempt, in the worker.

The socket sits alone in a fresh directory only the worker's user can enter (0700); a sandbox
backend binds that directory (or the socket) into the sandbox, where the harness reaches the model
as http://gateway/v1/... through it, with any dummy key. Inside the sandbox the socket is the only
way out, so it accepts any user there (0666); on the host the directory keeps other users out.

Bounds, per trial attempt: at most VERIHARM_GATEWAY_MAX_CONNECTIONS connections are open at once,
each served by one thread of a fixed pool of that size (a connection past the cap gets a 503 and
is closed by the accepting thread, which reads nothing from it); a body is refused on its
Content-Length (over VERIHARM_GATEWAY_MAX_BODY_BYTES: 413) before a byte of it is read. So a trial
costs at most MAX_CONNECTIONS + 1 threads, and at most MAX_CONNECTIONS bodies of MAX_BODY_BYTES
are held (with their parsed JSON, about four times that) at once: docs/harnesses.md.
"""

from __future__ import annotations

import logging
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from django.conf import settings

from .checks import max_body_bytes
from .core import Gateway
from .responses import GatewayResponse, error_response

logger = logging.getLogger(__name__)

SOCKET_NAME = "model.sock"


class _Server(socketserver.UnixStreamServer):
    """Serves each connection on a thread of a fixed pool; a connection past the cap is refused."""

    gateway: Gateway
    # Connections a burst of parallel calls makes before the accepting thread takes them.
    request_queue_size = 128

    def __init__(self, path: str, handler: type[BaseHTTPRequestHandler], gateway: Gateway, connections: int) -> None:
        super().__init__(path, handler)
        self.gateway = gateway
        self.max_connections = connections
        self._pool = ThreadPoolExecutor(max_workers=connections, thread_name_prefix=f"model-gateway-{gateway.trial_id}")
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self.refused_connections = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            admitted = len(self._open) < self.max_connections
            if admitted:
                self._open.add(request)
            else:
                self.refused_connections += 1
        if not admitted:
            self._refuse(request)
            return
        try:
            self._pool.submit(self._work, request, client_address)
        except RuntimeError:  # the pool is shut down: the gateway is closing
            self._forget(request)
            self.shutdown_request(request)

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._forget(request)
            self.shutdown_request(request)

    def _forget(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)

    def _refuse(self, request: socket.socket) -> None:
        response = error_response(
            self.gateway.upstream.api,
            503,
            "api_error",
            f"the trial's model gateway has its {self.max_connections} connections open: close one first",
        )
        with self.gateway._lock:
            self.gateway.gateway_failures += 1
        head = (
            f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(response.content)}\r\nConnection: close\r\n\r\n"
        ).encode()
        try:
            # Never blocks the accepting thread: a client that does not read loses the answer.
            request.setblocking(False)
            request.send(head + response.content)
        except OSError:
            pass
        self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.exception("model gateway of trial %s: a connection failed", self.gateway.trial_id)

    def server_close(self) -> None:
        super().server_close()
        with self._open_lock:
            still_open = list(self._open)
        for request in still_open:  # idle keep-alive connections: their threads end at once
            try:
                request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    # A client that stops sending is dropped rather than holding a thread for ever.
    timeout = 300

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        logger.debug("gateway: " + format, *args)

    def address_string(self) -> str:
        return "unix-socket"

    def __getattr__(self, name: str) -> Any:
        # Every method reaches the same checks, so GET, PUT, CONNECT, ... get the gateway's own 4xx.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def _read_body(self) -> bytes | GatewayResponse:
        api = self.server.gateway.upstream.api
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            return error_response(api, 411, "invalid_request_error", "send the body with a Content-Length")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            return error_response(api, 400, "invalid_request_error", "Content-Length is not a number")
        limit = max_body_bytes()
        if length > limit or length < 0:
            # Refused on the header alone: the body is never read.
            self.close_connection = True
            return error_response(api, 413, "invalid_request_error", f"the request body is over {limit} bytes")
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        response: GatewayResponse | None = None
        try:
            body = self._read_body()
            if isinstance(body, GatewayResponse):
                response = body
            else:
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    response = self.server.gateway.handle(self.command, self.path, headers, body)
                except Exception:  # the database or a bug: the harness gets an answer, the log the cause
                    logger.exception("model gateway of trial %s failed on a request", self.server.gateway.trial_id)
                    with self.server.gateway._lock:
                        self.server.gateway.gateway_failures += 1
                    response = error_response(
                        self.server.gateway.upstream.api,
                        502,
                        "api_error",
                        "the gateway failed on this request; see the worker's log",
                    )
            self._send(response)
        except OSError:  # the client went away (broken pipe, reset, its socket shut on close)
            self.close_connection = True
        finally:
            if response is not None:
                response.close()

    def _send(self, response: GatewayResponse) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        if response.stream is None:
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.content)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            for chunk in response.stream:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        finally:
            response.close()


@dataclass
class TrialGateway:
    """A running gateway: `socket_path` for a harness in a sandbox, `gateway` for callers in the worker."""

    gateway: Gateway
    socket_dir: Path
    socket_path: Path

    @property
    def budget_refusals(self) -> int:
        """How many calls were refused because the run's budget was spent."""
        return self.gateway.budget_refusals

    @property
    def gateway_failures(self) -> int:
        """How many calls the gateway itself refused or failed (not the budget, not the upstream)."""
        return self.gateway.gateway_failures

    @property
    def forwarded(self) -> int:
        """Calls forwarded to the upstream."""
        return self.gateway.forwarded

    @property
    def answered(self) -> int:
        """Forwarded calls the upstream answered with success."""
        return self.gateway.answered

    @property
    def limit_hit(self) -> str:
        """Why the gateway stopped the agent by its own call cap ("" if it did not): the trial ends
        as an agent error with this reason, never with a verdict."""
        return self.gateway.limit_hit

    @property
    def calls_refused_over_cap(self) -> int:
        """How many requests came past the trial's call cap and were refused."""
        return self.gateway.calls_refused_over_cap

    def post_json(self, path: str, payload: dict[str, Any], timeout: float | None = None) -> tuple[int, Any]:
        return self.gateway.post_json(path, payload, timeout=timeout)


@contextmanager
def serve(gateway: Gateway, socket_dir: Path | None = None) -> Iterator[TrialGateway]:
    """Serve `gateway` on a Unix socket in a private directory until the block ends; then finish
    the calls still in flight with what they streamed, record them, and close."""
    directory = Path(tempfile.mkdtemp(prefix="veriharm-gateway-", dir=socket_dir))
    directory.chmod(0o700)
    path = directory / SOCKET_NAME
    server = _Server(str(path), _Handler, gateway, max(int(settings.VERIHARM_GATEWAY_MAX_CONNECTIONS), 1))
    path.chmod(0o666)
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.2},
        name=f"model-gateway-{gateway.trial_id}",
        daemon=True,
    )
    thread.start()
    try:
        yield TrialGateway(gateway=gateway, socket_dir=directory, socket_path=path)
    finally:
        try:
            server.shutdown()
            thread.join(timeout=5)
            gateway.close()
        finally:
            server.server_close()
            shutil.rmtree(directory, ignore_errors=True)
