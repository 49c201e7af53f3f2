"""Forwarding one call to the upstream: a slot under the trial's limits, the budget's hold, bounded
retries of transient failures with backoff, and the answer passed back whole or as a ``StreamRelay``.

The gateway it works for is named by what it offers (``Forwarder``), so this module does not import
the one in ``core``."""

from __future__ import annotations

import random
import time
from typing import Protocol

import httpx
from django.conf import settings

from .calls import Call
from .config import Upstream
from .ledger import BudgetSpent
from .limits import EndpointLimiter, LimitTimeout
from .relay import StreamRelay
from .responses import GatewayResponse, error_response
from .scrubbing import KeyScrubber, excerpt, scrub, scrubbed_headers
from .usage import from_body

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 529})


class Forwarder(Protocol):
    """What forwarding needs of the gateway it works for."""

    upstream: Upstream
    client: httpx.Client
    limiter: EndpointLimiter
    max_retries: int

    def reserve(self, call: Call) -> None:
        """Hold the call's most possible cost under the run's budget (once); BudgetSpent."""

    def count_gateway_failure(self) -> None: ...

    def count_budget_refusal(self) -> None: ...

    def record(self, call: Call) -> None:
        """Record the call once and take it off the calls in flight."""


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


def forward(
    gateway: Forwarder, call: Call, url: str, headers: dict[str, str], body: bytes, scrubber: KeyScrubber
) -> GatewayResponse:
    """Send the call, retrying what ``RETRIED_STATUSES`` and transport errors name while its time lasts;
    the answer, or the gateway's refusal when a limit, the budget or the closing gateway stops it."""
    api = gateway.upstream.api
    deadline = call.started + call.timeout
    last: httpx.Response | None = None
    while True:
        try:
            gateway.limiter.acquire(deadline)
        except LimitTimeout as exc:
            if call.retries == 0:  # never sent: the gateway's own refusal
                call.status, call.gateway_failure = 429, True
                call.error = f"the gateway's limits for this trial: {exc}"
                gateway.count_gateway_failure()
                return error_response(api, 429, "rate_limit_error", call.error)
            break
        handed_over = False
        try:
            if call.aborted:  # the gateway closed while this call waited: never forwarded, not recorded
                call.status = -1
                return error_response(
                    api, 503, "api_error", "the trial's model gateway closed: its agent's command ended"
                )
            try:
                gateway.reserve(call)
            except BudgetSpent as exc:
                call.status = -1  # refused before it was forwarded: nothing to record
                gateway.count_budget_refusal()
                return error_response(
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
                request = gateway.client.build_request(
                    "POST",
                    url,
                    headers=headers,
                    content=body,
                    timeout=httpx.Timeout(left, connect=min(10.0, left)),
                )
                response = call.response = gateway.client.send(request, stream=True)
            except httpx.TimeoutException as exc:
                call.status, call.error = 504, f"the upstream did not answer in time: {exc}"
            except httpx.HTTPError as exc:
                call.status, call.error = 502, f"the upstream could not be reached: {type(exc).__name__}: {exc}"
            if response is not None and response.status_code not in RETRIED_STATUSES:
                reply = upstream_answer(gateway, call, response, scrubber)
                handed_over = reply.stream is not None  # the relay frees the slot at its end
                return reply
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
                gateway.limiter.release()
        delay = backoff_delay(call.retries, retry_after)
        if call.aborted or call.retries >= gateway.max_retries or time.monotonic() + delay >= deadline:
            break
        call.retries += 1
        time.sleep(delay)
    if last is not None and last.status_code == call.status:
        # The upstream's own final answer (e.g. its 429 with Retry-After) goes back as it was.
        return GatewayResponse(
            last.status_code, scrubbed_headers(last, scrubber.key), scrub(last.content, scrubber.key)
        )
    return error_response(
        api,
        call.status or 502,
        "api_error",
        f"{call.error} (after {call.retries} retr{'y' if call.retries == 1 else 'ies'})",
    )


def upstream_answer(gateway: Forwarder, call: Call, response: httpx.Response, scrubber: KeyScrubber) -> GatewayResponse:
    """The upstream's answer passed back: whole and scrubbed, or streamed through a ``StreamRelay``."""
    call.status = response.status_code
    headers = scrubbed_headers(response, scrubber.key)
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        content: bytes | None = None
        try:
            content = response.read()
        except httpx.HTTPError as exc:
            call.status, call.error = 502, f"the upstream's answer broke off: {exc}"
        finally:
            response.close()
        if content is None:
            return error_response(gateway.upstream.api, 502, "api_error", call.error)
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
            return error_response(gateway.upstream.api, 502, "api_error", call.error)
        # Recorded (by handle) before the answer leaves and before the slot is freed, so the next
        # call's budget check counts this one.
        return GatewayResponse(response.status_code, headers, scrubber.feed(content) + scrubber.flush())
    call.streamed = True
    return GatewayResponse(
        response.status_code,
        headers,
        stream=StreamRelay(call, response, scrubber, record=gateway.record, release=gateway.limiter.release),
    )
