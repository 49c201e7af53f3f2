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

from .answers import local_answer
from .config import Api, KeyMissing, Upstream
from .ledger import BudgetSpent, CallRecord, Ledger, Reservation
from .limits import EndpointLimiter, LimitTimeout
from .routes import Route, RouteRefused, route_for, served
from .usage import StreamUsage, Usage, estimate_tokens, from_body

logger = logging.getLogger(__name__)

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
# Response headers passed back, and only after the key is scrubbed from their values; the body is
# re-framed by whoever sends it (length or chunks).
FORWARDED_RESPONSE_HEADERS = frozenset({"content-type", "retry-after", "x-request-id", "request-id"})
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 529})
# The output limit fields of the three body-named APIs, read for a call's budget estimate (Gemini's
# is generationConfig.maxOutputTokens).
OUTPUT_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
KEY_REMOVED = "[key removed by the gateway]"
ERROR_EXCERPT = 300


def _output_limits(api: str, payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """The call's output limit fields present in its body, by name."""
    if api == Api.GEMINI:
        config = payload.get("generationConfig")
        value = config.get("maxOutputTokens") if isinstance(config, dict) else None
        return [] if value is None else [("generationConfig.maxOutputTokens", value)]
    return [(name, payload[name]) for name in OUTPUT_LIMIT_FIELDS if payload.get(name) is not None]


def max_body_bytes() -> int:
    return int(settings.VERIHARM_GATEWAY_MAX_BODY_BYTES)


def _printable(value: str, *, space: bool) -> bool:
    """Only what an HTTP client can send unchanged: visible ASCII (and space, tab in header values)."""
    low = 0x20 if space else 0x21
    return all(low <= ord(c) <= 0x7E or (space and c == "\t") for c in value)


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


# Google's error statuses by HTTP status, for Gemini-shaped refusals.
GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _error(api: str, status: int, kind: str, message: str, **extra_headers: str) -> GatewayResponse:
    """A refusal shaped as the flavour's own error, so the harness's SDK shows the message."""
    if api == Api.ANTHROPIC:
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    elif api == Api.GEMINI:
        fallback = "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"
        payload = {"error": {"code": status, "message": message, "status": GEMINI_STATUSES.get(status, fallback)}}
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
    return data.replace(key, KEY_REMOVED.encode()) if key else data


def excerpt(data: bytes, key: bytes) -> str:
    """The start of an error body for the record: scrubbed whole first, so no cut can leave part of the key."""
    return scrub(data, key).decode("utf-8", "replace")[:ERROR_EXCERPT]


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


@dataclass(eq=False)  # each call is its own, in the set of calls in flight
class _Call:
    """What the gateway learns of one call while handling it, recorded at its end."""

    route: str
    model: str
    streamed: bool
    started: float
    timeout: float
    # What the budget estimate and a usage estimate start from.
    request_bytes: int = 0
    output_bound: int = 0
    retries: int = 0
    status: int = 0
    usage: Usage = field(default_factory=Usage)
    # Characters of answer text passed on: a usage estimate's output when the upstream sent none.
    answer_chars: int = 0
    error: str = ""
    gateway_failure: bool = False
    # The gateway closed while the call was in flight (the agent's command ended).
    aborted: bool = False
    response: httpx.Response | None = None
    reservation: Reservation | None = None
    recorded: bool = False


class Gateway:
    """Forwards the routes of one upstream's API for one trial attempt (or, without a ledger, for a
    caller that needs no accounting, such as a harness tried out on its own).

    Its concurrency and rate limits are its own: one trial's calls never wait for another's."""

    def __init__(
        self,
        upstream: Upstream,
        *,
        trial_id: int | None = None,
        ledger: Ledger | None = None,
        transport: httpx.BaseTransport | None = None,
        models: tuple[str, ...] = (),
    ) -> None:
        self.upstream = upstream
        # What a model list answers: the agent's model(s), then those of the price table.
        self.models = tuple(dict.fromkeys((*models, *upstream.prices)))
        self.max_calls = upstream.max_calls or int(settings.VERIHARM_GATEWAY_MAX_CALLS_PER_TRIAL)
        self.trial_id = trial_id
        self.ledger = ledger
        self.limiter = EndpointLimiter(
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
        self._idle = threading.Condition(self._lock)
        self._in_flight: set[_Call] = set()
        self._closing = False
        self.budget_refusals = 0
        # Calls the gateway itself refused or failed (its limits, its key, its own error).
        self.gateway_failures = 0
        self.calls = 0
        # Calls forwarded to the upstream, and those it answered with success: none answered among
        # those forwarded means the agent never had a model.
        self.forwarded = 0
        self.answered = 0
        # Requests admitted under the call cap, and those refused past it (the harness's doing).
        self.requests = 0
        self.calls_refused_over_cap = 0
        # Why the trial's agent was stopped by the gateway's own limit ("" while it was not).
        self.limit_hit = ""

    @property
    def budgeted(self) -> bool:
        return self.ledger is not None and self.ledger.budget_usd is not None

    def close(self) -> None:
        """Finish every call still in flight with what it has streamed, record it, then close."""
        self.drain(float(settings.VERIHARM_GATEWAY_DRAIN_SECONDS))
        try:
            if self.ledger is not None and self.budgeted:
                self.ledger.release_all()
        finally:
            self.client.close()

    def drain(self, timeout: float) -> None:
        with self._lock:
            self._closing = True
            calls = list(self._in_flight)
        for call in calls:
            call.aborted = True
            if call.response is not None:
                # Another thread reads it: closing breaks its read, and that thread records the call.
                try:
                    call.response.close()
                except Exception:  # a half-read response may already be closed or in use
                    logger.debug("gateway: closing an upstream response on drain", exc_info=True)
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._in_flight and time.monotonic() < deadline:
                self._idle.wait(max(deadline - time.monotonic(), 0.01))

    # --- checks --------------------------------------------------------------------------------

    def _route(self, method: str, target: str, headers: Mapping[str, str]) -> Route:
        """The route the request names, after the checks every request passes; RouteRefused."""
        api = self.upstream.api
        if not target.startswith("/"):
            raise RouteRefused(
                400,
                "invalid_request_error",
                f"the gateway forwards only to its own upstream; the request target {target[:200]!r} "
                f"names a host (use an origin-form path: {served(api)})",
            )
        if not _printable(target, space=False):
            raise RouteRefused(
                400,
                "invalid_request_error",
                f"the request target {target[:200]!r} holds a control byte or a character outside ASCII "
                "(percent-encode it)",
            )
        route = route_for(api, method, target)
        host = headers.get("host", "")
        if host:
            name = urlsplit(f"//{host}").hostname or ""
            if name not in LOCAL_HOSTS and name != urlsplit(self.upstream.base_url).hostname:
                raise RouteRefused(
                    421,
                    "invalid_request_error",
                    f"Host {host[:200]!r} names another upstream; this gateway forwards only to its own",
                )
        return route

    def _refuse_payload(self, route: Route, payload: dict[str, Any]) -> GatewayResponse | None:
        api = self.upstream.api
        model = route.model or payload.get("model")
        if not isinstance(model, str) or not model:
            return _error(api, 400, "invalid_request_error", "the request names no model")
        stream = payload.get("stream")
        if api != Api.GEMINI and stream is not None and not isinstance(stream, bool):
            # The upstreams' parsers differ on "true", 1 and the like; the gateway must read it as the
            # upstream does to count the call, so only JSON true and false are accepted.
            return _error(
                api,
                400,
                "invalid_request_error",
                f"stream must be true or false, not {json.dumps(stream)[:50]}",
            )
        for name, value in _output_limits(api, payload):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                return _error(api, 400, "invalid_request_error", f"{name} must be a whole number of tokens")
        if self.budgeted and self.upstream.price_of(model) is None:
            return _error(
                api,
                403,
                "permission_error",
                f"the run has a budget but the agent's price table has no entry for model {model!r}: "
                "its calls could not be counted against the budget",
            )
        return None

    def _output_bound(self, payload: dict[str, Any]) -> int:
        """The most output tokens the call can cost: its own limit, else the per-call ceiling."""
        limits = [value for _, value in _output_limits(self.upstream.api, payload) if isinstance(value, int)]
        return min(limits) if limits else int(settings.VERIHARM_GATEWAY_CALL_OUTPUT_TOKENS)

    def _admit(self, route: Route, model: str) -> GatewayResponse | None:
        """Count the request under the trial's call cap; past it, a refusal (the first one recorded,
        the rest only counted, so a harness looping on its refusals writes nothing more)."""
        api = self.upstream.api
        with self._lock:
            if self.requests < self.max_calls:
                self.requests += 1
                return None
            self.calls_refused_over_cap += 1
            first = self.calls_refused_over_cap == 1
            self.limit_hit = f"the harness made more than {self.max_calls} model calls"
        message = (
            f"the trial's model gateway takes at most {self.max_calls} calls and they are made: "
            "it accepts no more calls for this trial"
        )
        if first:
            self._record_plain(route.name, model, 403, error=message)
        return _error(api, 403, "permission_error", message)

    def _record_plain(self, route: str, model: str, status: int, *, error: str = "", started: float = 0.0) -> None:
        """Record a request no upstream was asked for (answered by the gateway, or refused at its cap)."""
        with self._lock:
            self.calls += 1
        if self.ledger is None:
            return
        self.ledger.settle(
            None,
            CallRecord(
                route=route,
                model=model[:200],
                streamed=False,
                status_code=status,
                input_tokens=0,
                output_tokens=0,
                usage_reported=False,
                usage_estimated=False,
                gateway_failure=False,
                latency=time.monotonic() - started if started else 0.0,
                retries=0,
                cost_usd=Decimal(0),
                error=error,
            ),
        )

    # --- the one path ----------------------------------------------------------------------------

    def handle(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes, timeout: float | None = None
    ) -> GatewayResponse:
        """Serve one request. `target` as on the request line; `timeout` caps the call's own
        (request_timeout), retries and waits for a slot included."""
        headers = {k.lower(): v for k, v in headers.items()}
        api = self.upstream.api
        started = time.monotonic()
        try:
            route = self._route(method.upper(), target, headers)
        except RouteRefused as exc:
            return _error(api, exc.status, exc.kind, exc.message, **({"allow": exc.allow} if exc.allow else {}))
        limit_bytes = max_body_bytes()
        if len(body) > limit_bytes:
            return _error(api, 413, "invalid_request_error", f"the request body is over {limit_bytes} bytes")
        payload: Any = {}
        if body or not route.local:
            try:
                payload = json.loads(body)
            except (ValueError, UnicodeDecodeError, RecursionError):
                payload = None
        if not isinstance(payload, dict):
            return _error(api, 400, "invalid_request_error", "the request body must be a JSON object")
        named = route.model or payload.get("model")
        model = named[:200] if isinstance(named, str) else ""
        refused = self._admit(route, model)
        if refused is not None:
            return refused
        if route.local:
            answer = local_answer(api, route, payload, self.models)
            self._record_plain(route.name, model, answer.status, started=started)
            return GatewayResponse(answer.status, [("content-type", "application/json")], answer.content)
        refused = self._refuse_payload(route, payload)
        if refused is not None:
            return refused
        forwarded = {k: v for k, v in headers.items() if k in FORWARDED_REQUEST_HEADERS}
        for name, value in forwarded.items():
            if not _printable(value, space=True):
                return _error(
                    api,
                    400,
                    "invalid_request_error",
                    f"the {name} header holds a control byte or a character outside ASCII",
                )
        streamed = route.streamed or (api != Api.GEMINI and payload.get("stream") is True)
        if streamed and route.name == "chat_completions":
            # Chat completions report usage in a stream only when asked: the gateway asks, so that
            # streamed calls are counted too (clients ignore the extra last chunk without choices).
            options = payload.get("stream_options")
            payload["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
            body = json.dumps(payload).encode()
        call = _Call(
            route=route.name,
            model=model,
            streamed=streamed,
            started=started,
            timeout=self.upstream.request_timeout if timeout is None else min(timeout, self.upstream.request_timeout),
            request_bytes=len(body),
            output_bound=self._output_bound(payload),
        )
        try:
            key = self.upstream.api_key()
        except KeyMissing as exc:
            call.status, call.gateway_failure = 500, True
            call.error = f"the gateway cannot authenticate upstream: {exc}"
            with self._lock:
                self.gateway_failures += 1
            self._record(call)
            return _error(api, 500, "api_error", call.error)
        forwarded["content-type"] = "application/json"
        if api == Api.ANTHROPIC:
            forwarded.setdefault("anthropic-version", "2023-06-01")
            if key:
                forwarded["x-api-key"] = key
        elif api == Api.GEMINI:
            if key:
                forwarded["x-goog-api-key"] = key
        elif key:
            forwarded["authorization"] = f"Bearer {key}"
        url = self.upstream.upstream_url(route.upstream_path, route.query)
        with self._lock:
            if self._closing:
                closing = True
            else:
                closing = False
                self._in_flight.add(call)
        if closing:
            return _error(api, 503, "api_error", "the trial's model gateway is closing: its agent's command has ended")
        handed_over = False
        try:
            response = self._forward(call, url, forwarded, body, KeyScrubber(key))
            handed_over = response.stream is not None
            return response
        except Exception as exc:
            # A bug or the database: recorded as the gateway's own failure, then the server answers 502.
            call.status, call.gateway_failure = 502, True
            call.error = f"the gateway failed on this request: {type(exc).__name__}"
            raise
        finally:
            if not handed_over:
                self._record(call)

    def _estimate(self, call: _Call) -> Decimal:
        """The most a call can cost: every request byte a token (no tokenizer packs fewer than one
        byte into a token) and its output bound."""
        price = self.upstream.price_of(call.model)
        return Decimal(0) if price is None else price.cost(call.request_bytes, call.output_bound)

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
                if call.retries == 0:  # never sent: the gateway's own refusal
                    call.status, call.gateway_failure = 429, True
                    call.error = f"the gateway's limits for this trial: {exc}"
                    with self._lock:
                        self.gateway_failures += 1
                    return _error(api, 429, "rate_limit_error", call.error)
                break
            handed_over = False
            try:
                if call.aborted:  # the gateway closed while this call waited: never forwarded, not recorded
                    call.status = -1
                    return _error(api, 503, "api_error", "the trial's model gateway closed: its agent's command ended")
                if call.reservation is None and self.ledger is not None and self.budgeted:
                    try:
                        # The hold lapses by itself only if this worker dies mid-call (the trial's next
                        # attempt gives back the holds of its earlier ones at once).
                        call.reservation = self.ledger.reserve(self._estimate(call), call.timeout + 3600.0)
                    except BudgetSpent as exc:
                        call.status = -1  # refused before it was forwarded: nothing to record
                        with self._lock:
                            self.budget_refusals += 1
                        return _error(
                            api,
                            429,
                            "budget_exhausted",
                            f"the run's model budget of ${exc.budget_usd} is spent (${exc.committed_usd:.4f} "
                            "recorded or held by calls in flight): the gateway accepts no more model calls for "
                            "this run",
                        )
                response = None
                try:
                    left = max(deadline - time.monotonic(), 0.1)
                    request = self.client.build_request(
                        "POST",
                        url,
                        headers=headers,
                        content=body,
                        timeout=httpx.Timeout(left, connect=min(10.0, left)),
                    )
                    response = call.response = self.client.send(request, stream=True)
                except httpx.TimeoutException as exc:
                    call.status, call.error = 504, f"the upstream did not answer in time: {exc}"
                except httpx.HTTPError as exc:
                    call.status, call.error = 502, f"the upstream could not be reached: {type(exc).__name__}: {exc}"
                if response is not None and response.status_code not in RETRIED_STATUSES:
                    answer = self._answer(call, response, scrubber)
                    handed_over = answer.stream is not None  # the relay frees the slot at its end
                    return answer
                retry_after = None
                if response is not None:
                    try:
                        response.read()
                    except httpx.HTTPError:
                        pass
                    finally:
                        response.close()
                    call.status, retry_after = response.status_code, response.headers.get("retry-after")
                    call.error = f"HTTP {response.status_code}: " + excerpt(response.content, scrubber.key)
                last = response
            finally:
                if not handed_over:
                    self.limiter.release()
            delay = backoff_delay(call.retries, retry_after)
            if call.aborted or call.retries >= self.max_retries or time.monotonic() + delay >= deadline:
                break
            call.retries += 1
            time.sleep(delay)
        if last is not None and last.status_code == call.status:
            # The upstream's own final answer (e.g. its 429 with Retry-After) goes back as it was.
            return GatewayResponse(
                last.status_code, self._headers(last, scrubber.key), scrub(last.content, scrubber.key)
            )
        return _error(
            api,
            call.status or 502,
            "api_error",
            f"{call.error} (after {call.retries} retr{'y' if call.retries == 1 else 'ies'})",
        )

    @staticmethod
    def _headers(response: httpx.Response, key: bytes) -> list[tuple[str, str]]:
        text = key.decode("latin-1")
        return [
            (name, value.replace(text, KEY_REMOVED) if text else value)
            for name, value in response.headers.items()
            if name.lower() in FORWARDED_RESPONSE_HEADERS
        ]

    def _answer(self, call: _Call, response: httpx.Response, scrubber: KeyScrubber) -> GatewayResponse:
        call.status = response.status_code
        headers = self._headers(response, scrubber.key)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            content: bytes | None = None
            try:
                content = response.read()
            except httpx.HTTPError as exc:
                call.status, call.error = 502, f"the upstream's answer broke off: {exc}"
            finally:
                response.close()
            if content is None:
                return _error(self.upstream.api, 502, "api_error", call.error)
            call.usage = from_body(content)
            call.answer_chars = len(content)
            if response.status_code >= 400:
                call.error = excerpt(content, scrubber.key)
            elif call.streamed:
                # Asked for a stream, answered whole: the CLIs misread that in their own ways (an empty
                # answer, an exit, a loop of retries without end), so it is refused here, by name, and
                # recorded as the upstream's failure (its tokens still counted).
                call.streamed = False
                call.status = 502
                call.error = "the upstream answered a streamed request with a whole body, not server-sent events"
                return _error(self.upstream.api, 502, "api_error", call.error)
            # Recorded (by handle) before the answer leaves and before the slot is freed, so the next
            # call's budget check counts this one.
            return GatewayResponse(response.status_code, headers, scrubber.feed(content) + scrubber.flush())
        call.streamed = True
        return GatewayResponse(response.status_code, headers, stream=_Relay(self, call, response, scrubber))

    def _record(self, call: _Call) -> None:
        """Record the call once, with its usage (estimated when the upstream gave none for an answer it
        sent), and take it off the calls in flight, whatever happens to the record."""
        try:
            if call.recorded or call.status < 0:
                return
            call.recorded = True
            with self._lock:
                self.calls += 1
                self.forwarded += 1
                if 200 <= call.status < 400:
                    self.answered += 1
            if self.ledger is None:
                return
            usage, estimated = finished_usage(call)
            price = self.upstream.price_of(call.model)
            cost = None if price is None else price.cost(usage.input_tokens, usage.output_tokens)
            self.ledger.settle(
                call.reservation,
                CallRecord(
                    route=call.route,
                    model=call.model,
                    streamed=call.streamed,
                    status_code=min(max(call.status or 502, 100), 599),
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    usage_reported=usage.reported,
                    usage_estimated=estimated,
                    gateway_failure=call.gateway_failure,
                    latency=time.monotonic() - call.started,
                    retries=call.retries,
                    cost_usd=cost,
                    error=call.error,
                ),
            )
        finally:
            with self._idle:
                self._in_flight.discard(call)
                self._idle.notify_all()

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


def finished_usage(call: _Call) -> tuple[Usage, bool]:
    """The call's tokens, and whether they are an estimate.

    An answer the upstream sent (2xx) without its full usage, or cut short (the client left, the
    agent's command ended), is estimated: input from the request's size, output from the answer
    text passed on, at ESTIMATE_CHARS_PER_TOKEN; a whole answer lost when the gateway closed counts
    its output bound. Refusals and upstream errors cost nothing."""
    usage = call.usage
    answered = 200 <= call.status < 300 or (call.aborted and call.response is not None)
    if usage.complete or not answered:
        return usage, False
    output = estimate_tokens(call.answer_chars)
    if call.aborted and not call.streamed:
        output = call.output_bound
    return (
        Usage(
            input_tokens=usage.input_tokens or estimate_tokens(call.request_bytes),
            output_tokens=max(usage.output_tokens, output),
            reported=usage.reported,
            complete=False,
        ),
        True,
    )


class _Relay:
    """A streamed answer passed on as its events come, its usage counted on the way.

    The last piece is held back until the call is recorded, so a client that starts its next call
    on the end of this stream finds it counted. Closing it early (the client went away, or never
    read it) still releases the endpoint's slot and records the call, once, with what was streamed."""

    def __init__(self, gateway: Gateway, call: _Call, response: httpx.Response, scrubber: KeyScrubber) -> None:
        self.gateway = gateway
        self.call = call
        self.response = response
        self.scrubber = scrubber
        self.reader = StreamUsage()
        self._finished = False
        self._ended = False
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
            self._ended = True
        except Exception as exc:  # noqa: BLE001 - a broken or closed upstream stream, whatever raised
            if self.call.aborted:
                self.call.error = "the agent's command ended while the answer streamed: counted as far as it came"
            else:
                self.call.error = f"the upstream's stream broke off: {type(exc).__name__}: {exc}"
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
            try:
                self.response.close()
            finally:
                self.call.usage = self.reader.close()
                self.call.answer_chars = self.reader.text_chars
                if not self._ended and not self.call.error:
                    self.call.error = "the client left before the stream ended: counted as far as it came"
                self.gateway._record(self.call)
        finally:
            # Only once counted: a call waiting for this slot then sees this one in the budget.
            self.gateway.limiter.release()

    def close(self) -> None:
        try:
            self._pieces.close()  # runs the finally of a stream being read
        finally:
            self._finish()  # and covers one never started
