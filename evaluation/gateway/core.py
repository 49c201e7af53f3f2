"""The model gateway's one code path: check a request, admit it under the run's budget, forward it
to the agent's upstream with the real key, retry transient failures, pass the answer back (streamed
or whole) and record the call with its tokens and cost.

Both ways in use it: the Unix-socket server a harness inside a sandbox talks to (`server.py`) and
the built-in chat loop in the worker (`Gateway.post_json`). Nothing here reads the worker's
environment except the one variable the agent's configuration names (`Upstream.api_key`), and the
httpx client is built with trust_env=False so no proxy setting or .netrc credential of the worker
is ever applied to a request.

The parts: ``checks`` (what a request must be), ``forwarding`` (retries, the budget's hold, the
answer passed back), ``relay`` (a streamed answer), ``scrubbing`` (the key kept out of answers),
``calls`` (what is learnt of a call and recorded), ``responses`` (answers and refusals).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import httpx
from django.conf import settings

from .answers import local_answer
from .calls import Call, finished_usage
from .checks import FORWARDED_REQUEST_HEADERS, checked_route, max_body_bytes, output_bound, payload_refusal, printable
from .config import Api, KeyMissing, Upstream
from .forwarding import forward
from .ledger import CallRecord, Ledger
from .limits import EndpointLimiter
from .responses import GatewayResponse, error_response
from .routes import Route, RouteRefused
from .scrubbing import KeyScrubber

logger = logging.getLogger(__name__)


class BudgetExhausted(Exception):
    """The run's model budget is spent: no more model calls for any of its trials."""


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
        self._in_flight: set[Call] = set()
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

    # --- admission ----------------------------------------------------------------------------------

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
        return error_response(api, 403, "permission_error", message)

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
            route = checked_route(self.upstream, method.upper(), target, headers)
        except RouteRefused as exc:
            return error_response(api, exc.status, exc.kind, exc.message, **({"allow": exc.allow} if exc.allow else {}))
        limit_bytes = max_body_bytes()
        if len(body) > limit_bytes:
            return error_response(api, 413, "invalid_request_error", f"the request body is over {limit_bytes} bytes")
        payload: Any = {}
        if body or not route.local:
            try:
                payload = json.loads(body)
            except (ValueError, UnicodeDecodeError, RecursionError):
                payload = None
        if not isinstance(payload, dict):
            return error_response(api, 400, "invalid_request_error", "the request body must be a JSON object")
        named = route.model or payload.get("model")
        model = named[:200] if isinstance(named, str) else ""
        refused = self._admit(route, model)
        if refused is not None:
            return refused
        if route.local:
            answer = local_answer(api, route, payload, self.models)
            self._record_plain(route.name, model, answer.status, started=started)
            return GatewayResponse(answer.status, [("content-type", "application/json")], answer.content)
        refused = payload_refusal(self.upstream, self.budgeted, route, payload)
        if refused is not None:
            return refused
        forwarded = {k: v for k, v in headers.items() if k in FORWARDED_REQUEST_HEADERS}
        for name, value in forwarded.items():
            if not printable(value, space=True):
                return error_response(
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
        call = Call(
            route=route.name,
            model=model,
            streamed=streamed,
            started=started,
            timeout=self.upstream.request_timeout if timeout is None else min(timeout, self.upstream.request_timeout),
            request_bytes=len(body),
            output_bound=output_bound(self.upstream, payload),
        )
        try:
            key = self.upstream.api_key()
        except KeyMissing as exc:
            call.status, call.gateway_failure = 500, True
            call.error = f"the gateway cannot authenticate upstream: {exc}"
            with self._lock:
                self.gateway_failures += 1
            self.record(call)
            return error_response(api, 500, "api_error", call.error)
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
            return error_response(
                api, 503, "api_error", "the trial's model gateway is closing: its agent's command has ended"
            )
        handed_over = False
        try:
            response = forward(self, call, url, forwarded, body, KeyScrubber(key))
            handed_over = response.stream is not None
            return response
        except Exception as exc:
            # A bug or the database: recorded as the gateway's own failure, then the server answers 502.
            call.status, call.gateway_failure = 502, True
            call.error = f"the gateway failed on this request: {type(exc).__name__}"
            raise
        finally:
            if not handed_over:
                self.record(call)

    def reserve(self, call: Call) -> None:
        """Hold the most the call can cost under the run's budget, once (BudgetSpent when it is spent):
        every request byte a token (no tokenizer packs fewer than one byte into a token) and its
        output bound. The hold lapses by itself only if this worker dies mid-call (the trial's next
        attempt gives back the holds of its earlier ones at once)."""
        if call.reservation is None and self.ledger is not None and self.budgeted:
            price = self.upstream.price_of(call.model)
            estimate = Decimal(0) if price is None else price.cost(call.request_bytes, call.output_bound)
            call.reservation = self.ledger.reserve(estimate, call.timeout + 3600.0)

    def count_gateway_failure(self) -> None:
        with self._lock:
            self.gateway_failures += 1

    def count_budget_refusal(self) -> None:
        with self._lock:
            self.budget_refusals += 1

    def record(self, call: Call) -> None:
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
