"""The model gateway's one code path: check a request, admit it under the run's budget, forward it
to the agent's upstream with the real key, retry transient failures, pass the answer back (streamed
or whole) and record the call with its tokens and cost.

Both ways in use it: the Unix-socket server a harness inside a sandbox talks to (`server.py`) and
the built-in chat loop in the worker (`Gateway.post_json`). Nothing here reads the worker's
environment except the one variable the agent's configuration names (`Upstream.api_key`), and the
httpx client is built with trust_env=False so no proxy setting or .netrc credential of the worker
is ever applied to a request.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from .config import ROUTE_NAMES, ROUTES, Api, KeyMissing, Upstream
from .limits import LimitTimeout, limiter_for
from .usage import StreamUsage, Usage, from_body

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 32 * 1024 * 1024
# Names a client inside a sandbox may put in Host when it reaches the gateway through its socket.
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "gateway", "model-gateway", "veriharm-gateway"})
# Request headers passed on; every other one (credentials, cookies, proxy and hop-by-hop headers,
# anything a harness invents) is dropped. The credential is added by the gateway alone.
FORWARDED_REQUEST_HEADERS = frozenset(
    {
        "content-type",
        "accept",
        "user-agent",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "idempotency-key",
    }
)
# Response headers passed back; the body is re-framed by whoever sends it (length or chunks).
FORWARDED_RESPONSE_HEADERS = frozenset({"content-type", "retry-after", "x-request-id", "request-id"})
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 529})


class BudgetExhausted(Exception):
    """The run's model budget is spent: no more model calls for any of its trials."""


@dataclass
class GatewayResponse:
    status: int
    headers: list[tuple[str, str]]
    # Whole answers and refusals carry `content`; streamed answers an iterator to drain (and close).
    content: bytes = b""
    stream: Iterator[bytes] | None = None

    def read(self) -> bytes:
        if self.stream is None:
            return self.content
        return b"".join(self.stream)

    def close(self) -> None:
        close = getattr(self.stream, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True)
class Budget:
    """The run a gateway's trial belongs to and the budget it was launched with (None: no budget)."""

    run_id: int
    budget_usd: Decimal | None


def _error(api: str, status: int, kind: str, message: str, **extra_headers: str) -> GatewayResponse:
    """A refusal shaped as the flavour's own error, so the harness's SDK shows the message."""
    if api == Api.ANTHROPIC:
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        payload = {"error": {"type": kind, "code": kind, "message": message}}
    headers = [("content-type", "application/json")] + list(extra_headers.items())
    return GatewayResponse(status, headers, json.dumps(payload).encode())


class KeyScrubber:
    """Replaces the real key wherever it shows in an answer (an upstream echoing it in an error),
    holding back the last len(key) - 1 bytes of each chunk in case the key straddles two chunks."""

    def __init__(self, key: str) -> None:
        self.key = key.encode()
        self._tail = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self.key:
            return chunk
        data = scrub(self._tail + chunk, self.key)
        keep = len(self.key) - 1
        if len(data) <= keep:
            self._tail = data
            return b""
        self._tail = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep]

    def flush(self) -> bytes:
        tail, self._tail = self._tail, b""
        return tail


def scrub(data: bytes, key: bytes) -> bytes:
    return data.replace(key, b"[key removed by the gateway]") if key else data


def backoff_delay(retry: int, retry_after: str | None) -> float:
    """Exponential backoff with jitter, or the upstream's Retry-After, never past the cap."""
    cap = float(settings.VERIHARM_GATEWAY_BACKOFF_MAX_SECONDS)
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), cap)
        except ValueError:
            pass
    base = float(settings.VERIHARM_GATEWAY_BACKOFF_SECONDS) * (2**retry)
    return min(base * (0.5 + random.random() / 2), cap)


@dataclass
class _Call:
    """What the gateway learns of one call while handling it, recorded at its end."""

    route: str
    model: str
    streamed: bool
    started: float
    timeout: float
    retries: int = 0
    status: int = 0
    usage: Usage = field(default_factory=Usage)
    error: str = ""


class Gateway:
    """Forwards the routes of one upstream's API for one trial attempt (or, without a trial, for a
    caller that needs no accounting, such as a harness tried out on its own)."""

    def __init__(
        self,
        upstream: Upstream,
        *,
        trial_id: int | None = None,
        attempt: int | None = None,
        budget: Budget | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.upstream = upstream
        self.trial_id = trial_id
        self.attempt = attempt
        self.budget = budget
        self.limiter = limiter_for(
            upstream.key,
            upstream.max_concurrency or settings.VERIHARM_GATEWAY_MAX_CONCURRENCY,
            upstream.requests_per_minute or settings.VERIHARM_GATEWAY_REQUESTS_PER_MINUTE,
        )
        self.max_retries = (
            upstream.max_retries if upstream.max_retries is not None else settings.VERIHARM_GATEWAY_MAX_RETRIES
        )
        # No redirects: a Location elsewhere would be a second upstream. trust_env=False: the worker's
        # proxy variables and .netrc never shape a request.
        self.client = httpx.Client(
            trust_env=False,
            follow_redirects=False,
            transport=transport,
            timeout=httpx.Timeout(upstream.request_timeout, connect=10.0),
        )
        self._lock = threading.Lock()
        self.budget_refusals = 0
        self.calls = 0

    def close(self) -> None:
        self.client.close()

    # --- checks --------------------------------------------------------------------------------

    def _refuse_target(self, method: str, target: str, headers: Mapping[str, str]) -> GatewayResponse | None:
        api = self.upstream.api
        served = ", ".join(f"POST {path}" for path in ROUTES[api])
        if not target.startswith("/"):
            return _error(
                api,
                400,
                "invalid_request_error",
                f"the gateway forwards only to its own upstream; the request target {target[:200]!r} "
                f"names a host (use an origin-form path: {served})",
            )
        path = urlsplit(target).path
        if path not in ROUTES[api]:
            return _error(api, 404, "not_found_error", f"the gateway serves only {served}, not {path[:200]!r}")
        if method != "POST":
            return _error(api, 405, "invalid_request_error", f"{path} takes POST only, not {method[:20]}", allow="POST")
        host = headers.get("host", "")
        if host:
            name = urlsplit(f"//{host}").hostname or ""
            if name not in LOCAL_HOSTS and name != urlsplit(self.upstream.base_url).hostname:
                return _error(
                    api,
                    421,
                    "invalid_request_error",
                    f"Host {host[:200]!r} names another upstream; this gateway forwards only to its own",
                )
        return None

    def _budget_refusal(self, model: str) -> GatewayResponse | None:
        if self.budget is None or self.budget.budget_usd is None:
            return None
        from evaluation import selectors

        api = self.upstream.api
        if self.upstream.price_of(model) is None:
            return _error(
                api,
                403,
                "permission_error",
                f"the run has a budget but the agent's price table has no entry for model {model!r}: "
                "its calls could not be counted against the budget",
            )
        spent = selectors.run_model_cost(self.budget.run_id)
        if spent >= self.budget.budget_usd:
            with self._lock:
                self.budget_refusals += 1
            return _error(
                api,
                429,
                "budget_exhausted",
                f"the run's model budget of ${self.budget.budget_usd} is spent (${spent:.4f} recorded): "
                "the gateway accepts no more model calls for this run",
            )
        return None

    # --- the one path ----------------------------------------------------------------------------

    def handle(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes, timeout: float | None = None
    ) -> GatewayResponse:
        """Serve one request. `target` as on the request line; `timeout` caps the call's own
        (request_timeout), retries and waits for a slot included."""
        headers = {k.lower(): v for k, v in headers.items()}
        refused = self._refuse_target(method.upper(), target, headers)
        if refused is not None:
            return refused
        api = self.upstream.api
        if len(body) > MAX_BODY_BYTES:
            return _error(api, 413, "invalid_request_error", f"the request body is over {MAX_BODY_BYTES} bytes")
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            payload = None
        if not isinstance(payload, dict):
            return _error(api, 400, "invalid_request_error", "the request body must be a JSON object")
        model = payload.get("model")
        if not isinstance(model, str) or not model:
            return _error(api, 400, "invalid_request_error", "the request names no model")
        refused = self._budget_refusal(model)
        if refused is not None:
            return refused
        path = urlsplit(target).path
        streamed = payload.get("stream") is True
        if streamed and path == "/v1/chat/completions":
            # Chat completions report usage in a stream only when asked: the gateway asks, so that
            # streamed calls are counted too (clients ignore the extra last chunk without choices).
            payload["stream_options"] = {**(payload.get("stream_options") or {}), "include_usage": True}
            body = json.dumps(payload).encode()
        try:
            key = self.upstream.api_key()
        except KeyMissing as exc:
            return _error(api, 500, "api_error", f"the gateway cannot authenticate upstream: {exc}")
        forwarded = {k: v for k, v in headers.items() if k in FORWARDED_REQUEST_HEADERS}
        forwarded["content-type"] = "application/json"
        if api == Api.ANTHROPIC:
            forwarded.setdefault("anthropic-version", "2023-06-01")
            if key:
                forwarded["x-api-key"] = key
        elif key:
            forwarded["authorization"] = f"Bearer {key}"
        query = urlsplit(target).query
        url = self.upstream.upstream_url(path) + (f"?{query}" if query else "")
        limit = self.upstream.request_timeout if timeout is None else min(timeout, self.upstream.request_timeout)
        call = _Call(
            route=ROUTE_NAMES[path], model=model[:200], streamed=streamed, started=time.monotonic(), timeout=limit
        )
        return self._forward(call, url, forwarded, body, KeyScrubber(key))

    def _forward(
        self, call: _Call, url: str, headers: dict[str, str], body: bytes, scrubber: KeyScrubber
    ) -> GatewayResponse:
        api = self.upstream.api
        deadline = call.started + call.timeout
        last: httpx.Response | None = None
        while True:
            try:
                self.limiter.acquire(deadline)
            except LimitTimeout as exc:
                if call.retries == 0:  # never sent: no model call to record
                    return _error(api, 429, "rate_limit_error", f"the gateway's limits for this endpoint: {exc}")
                break
            response = None
            try:
                left = max(deadline - time.monotonic(), 0.1)
                request = self.client.build_request(
                    "POST", url, headers=headers, content=body, timeout=httpx.Timeout(left, connect=min(10.0, left))
                )
                response = self.client.send(request, stream=True)
            except httpx.TimeoutException as exc:
                call.status, call.error = 504, f"the upstream did not answer in time: {exc}"
            except httpx.HTTPError as exc:
                call.status, call.error = 502, f"the upstream could not be reached: {type(exc).__name__}: {exc}"
            if response is not None and response.status_code not in RETRIED_STATUSES:
                return self._answer(call, response, scrubber)  # releases the slot when read
            retry_after = None
            if response is not None:
                try:
                    response.read()
                except httpx.HTTPError:
                    pass
                finally:
                    response.close()
                call.status, retry_after = response.status_code, response.headers.get("retry-after")
                call.error = f"HTTP {response.status_code}: " + scrub(response.content[:300], scrubber.key).decode(
                    "utf-8", "replace"
                )
            last = response
            self.limiter.release()
            delay = backoff_delay(call.retries, retry_after)
            if call.retries >= self.max_retries or time.monotonic() + delay >= deadline:
                break
            call.retries += 1
            time.sleep(delay)
        self._record(call)
        if last is not None and last.status_code == call.status:
            # The upstream's own final answer (e.g. its 429 with Retry-After) goes back as it was.
            return GatewayResponse(last.status_code, self._headers(last), scrub(last.content, scrubber.key))
        return _error(
            api,
            call.status or 502,
            "api_error",
            f"{call.error} (after {call.retries} retr{'y' if call.retries == 1 else 'ies'})",
        )

    @staticmethod
    def _headers(response: httpx.Response) -> list[tuple[str, str]]:
        return [(k, v) for k, v in response.headers.items() if k.lower() in FORWARDED_RESPONSE_HEADERS]

    def _answer(self, call: _Call, response: httpx.Response, scrubber: KeyScrubber) -> GatewayResponse:
        call.status = response.status_code
        headers = self._headers(response)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            try:
                content = response.read()
            except httpx.HTTPError as exc:
                call.status, call.error = 502, f"the upstream's answer broke off: {exc}"
                content = None
            finally:
                response.close()
            try:
                if content is not None:
                    call.usage = from_body(content)
                    if response.status_code >= 400:
                        call.error = scrub(content[:300], scrubber.key).decode("utf-8", "replace")
                # Recorded before the answer leaves and before the slot is freed, so the next call's
                # budget check counts this one.
                self._record(call)
            finally:
                self.limiter.release()
            if content is None:
                return _error(self.upstream.api, 502, "api_error", call.error)
            return GatewayResponse(response.status_code, headers, scrubber.feed(content) + scrubber.flush())
        call.streamed = True
        return GatewayResponse(response.status_code, headers, stream=_Relay(self, call, response, scrubber))

    def _record(self, call: _Call) -> None:
        with self._lock:
            self.calls += 1
        if self.trial_id is None:
            return
        from evaluation import runs

        price = self.upstream.price_of(call.model)
        cost = None if price is None else price.cost(call.usage.input_tokens, call.usage.output_tokens)
        runs.model_call_record(
            trial_id=self.trial_id,
            attempt=self.attempt or 1,
            route=call.route,
            model=call.model,
            streamed=call.streamed,
            status_code=call.status,
            input_tokens=call.usage.input_tokens,
            output_tokens=call.usage.output_tokens,
            usage_reported=call.usage.reported,
            latency=time.monotonic() - call.started,
            retries=call.retries,
            cost_usd=cost,
            error=call.error,
        )

    # --- in-process callers ------------------------------------------------------------------------

    def post_json(self, path: str, payload: dict[str, Any], timeout: float | None = None) -> tuple[int, Any]:
        """For callers in the worker (the built-in chat loop): the same path as a socket request."""
        response = self.handle(
            "POST",
            path,
            {"content-type": "application/json", "host": "gateway"},
            json.dumps(payload).encode(),
            timeout=timeout,
        )
        try:
            content = response.read()
        finally:
            response.close()
        try:
            return response.status, json.loads(content)
        except (ValueError, UnicodeDecodeError):
            return response.status, content.decode("utf-8", "replace")


class _Relay:
    """A streamed answer passed on as its events come, its usage counted on the way.

    The last piece is held back until the call is recorded, so a client that starts its next call
    on the end of this stream finds it counted. Closing it early (the client went away, or never
    read it) still releases the endpoint's slot and records the call, once."""

    def __init__(self, gateway: Gateway, call: _Call, response: httpx.Response, scrubber: KeyScrubber) -> None:
        self.gateway = gateway
        self.call = call
        self.response = response
        self.scrubber = scrubber
        self.reader = StreamUsage()
        self._finished = False
        self._pieces = self._run()

    def __iter__(self) -> _Relay:
        return self

    def __next__(self) -> bytes:
        return next(self._pieces)

    def _run(self) -> Generator[bytes, None, None]:
        held = b""
        try:
            for chunk in self.response.iter_bytes():
                self.reader.feed(chunk)
                out = self.scrubber.feed(chunk)
                if held:
                    yield held
                held = out
        except httpx.HTTPError as exc:
            self.call.error = f"the upstream's stream broke off: {exc}"
        finally:
            self._finish()
        tail = held + self.scrubber.flush()
        if tail:
            yield tail

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        try:
            self.response.close()
            self.call.usage = self.reader.close()
            self.gateway._record(self.call)
        finally:
            # Only once counted: a call waiting for this slot then sees this one in the budget.
            self.gateway.limiter.release()

    def close(self) -> None:
        self._pieces.close()  # runs the finally of a stream being read
        self._finish()  # and covers one never started
