"""The gateway as an HTTP/1.1 server on a Unix socket, one per trial attempt, in the worker.

The socket sits alone in a fresh directory only the worker's user can enter (0700); a sandbox
backend binds that directory (or the socket) into the sandbox, where the harness reaches the model
as http://gateway/v1/... through it, with any dummy key. Inside the sandbox the socket is the only
way out, so it accepts any user there (0666); on the host the directory keeps other users out.
"""

from __future__ import annotations

import logging
import shutil
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection

from .config import Upstream
from .core import MAX_BODY_BYTES, Budget, Gateway, GatewayResponse, _error

logger = logging.getLogger(__name__)

SOCKET_NAME = "model.sock"


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    gateway: Gateway


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
            return _error(api, 411, "invalid_request_error", "send the body with a Content-Length")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            return _error(api, 400, "invalid_request_error", "Content-Length is not a number")
        if length > MAX_BODY_BYTES or length < 0:
            self.close_connection = True
            return _error(api, 413, "invalid_request_error", f"the request body is over {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        close_old_connections()
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
                    response = _error(
                        self.server.gateway.upstream.api,
                        502,
                        "api_error",
                        "the gateway failed on this request; see the worker's log",
                    )
            self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            if response is not None:
                response.close()
            # Each request thread had its own database connection for the budget and the record.
            connection.close()

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

    def post_json(self, path: str, payload: dict[str, Any], timeout: float | None = None) -> tuple[int, Any]:
        return self.gateway.post_json(path, payload, timeout=timeout)


@contextmanager
def serve(gateway: Gateway, socket_dir: Path | None = None) -> Iterator[TrialGateway]:
    """Serve `gateway` on a Unix socket in a private directory until the block ends."""
    directory = Path(tempfile.mkdtemp(prefix="veriharm-gateway-", dir=socket_dir))
    directory.chmod(0o700)
    path = directory / SOCKET_NAME
    server = _Server(str(path), _Handler)
    server.gateway = gateway
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
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        gateway.close()
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def gateway_for_trial(
    trial_id: int, endpoint: Upstream, *, attempt: int | None = None, socket_dir: Path | None = None
) -> Iterator[TrialGateway]:
    """The model gateway of one trial attempt: forwards to `endpoint` only, records every call for
    the trial, and refuses calls once the trial's run has spent its budget."""
    from evaluation import selectors

    run_id, budget, attempts = selectors.trial_budget(trial_id)
    gateway = Gateway(
        endpoint,
        trial_id=trial_id,
        attempt=attempt or max(attempts, 1),
        budget=Budget(run_id=run_id, budget_usd=budget),
    )
    if socket_dir is None and settings.VERIHARM_GATEWAY_SOCKET_DIR:
        # A worker in a container shares this directory with the Docker engine's host, at the same path.
        socket_dir = Path(settings.VERIHARM_GATEWAY_SOCKET_DIR)
        socket_dir.mkdir(mode=0o711, parents=True, exist_ok=True)
    with serve(gateway, socket_dir) as running:
        yield running
