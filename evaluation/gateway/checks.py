"""The checks every request passes before the gateway forwards it: its target and Host name this
gateway's own upstream, its headers and body are what an HTTP client can send unchanged, its model is
named and priced when the run has a budget, and its output limit is a whole number of tokens."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from .config import Api, Upstream
from .responses import GatewayResponse, error_response
from .routes import Route, RouteRefused, route_for, served

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
# The output limit fields of the three body-named APIs, read for a call's budget estimate (Gemini's
# is generationConfig.maxOutputTokens).
OUTPUT_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def output_limits(api: str, payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """The call's output limit fields present in its body, by name."""
    if api == Api.GEMINI:
        config = payload.get("generationConfig")
        value = config.get("maxOutputTokens") if isinstance(config, dict) else None
        return [] if value is None else [("generationConfig.maxOutputTokens", value)]
    return [(name, payload[name]) for name in OUTPUT_LIMIT_FIELDS if payload.get(name) is not None]


def max_body_bytes() -> int:
    return int(settings.VERIHARM_GATEWAY_MAX_BODY_BYTES)


def printable(value: str, *, space: bool) -> bool:
    """Only what an HTTP client can send unchanged: visible ASCII (and space, tab in header values)."""
    low = 0x20 if space else 0x21
    return all(low <= ord(c) <= 0x7E or (space and c == "\t") for c in value)


def checked_route(upstream: Upstream, method: str, target: str, headers: Mapping[str, str]) -> Route:
    """The route the request names, after the checks every request passes; RouteRefused."""
    api = upstream.api
    if not target.startswith("/"):
        raise RouteRefused(
            400,
            "invalid_request_error",
            f"the gateway forwards only to its own upstream; the request target {target[:200]!r} "
            f"names a host (use an origin-form path: {served(api)})",
        )
    if not printable(target, space=False):
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
        if name not in LOCAL_HOSTS and name != urlsplit(upstream.base_url).hostname:
            raise RouteRefused(
                421,
                "invalid_request_error",
                f"Host {host[:200]!r} names another upstream; this gateway forwards only to its own",
            )
    return route


def payload_refusal(
    upstream: Upstream, budgeted: bool, route: Route, payload: dict[str, Any]
) -> GatewayResponse | None:
    """A refusal of the request's body (no model, a malformed stream flag or output limit, a model
    the budget cannot price), or None."""
    api = upstream.api
    model = route.model or payload.get("model")
    if not isinstance(model, str) or not model:
        return error_response(api, 400, "invalid_request_error", "the request names no model")
    stream = payload.get("stream")
    if api != Api.GEMINI and stream is not None and not isinstance(stream, bool):
        # The upstreams' parsers differ on "true", 1 and the like; the gateway must read it as the
        # upstream does to count the call, so only JSON true and false are accepted.
        return error_response(
            api,
            400,
            "invalid_request_error",
            f"stream must be true or false, not {json.dumps(stream)[:50]}",
        )
    for name, value in output_limits(api, payload):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return error_response(api, 400, "invalid_request_error", f"{name} must be a whole number of tokens")
    if budgeted and upstream.price_of(model) is None:
        return error_response(
            api,
            403,
            "permission_error",
            f"the run has a budget but the agent's price table has no entry for model {model!r}: "
            "its calls could not be counted against the budget",
        )
    return None


def output_bound(upstream: Upstream, payload: dict[str, Any]) -> int:
    """The most output tokens the call can cost: its own limit, else the per-call ceiling."""
    limits = [value for _, value in output_limits(upstream.api, payload) if isinstance(value, int)]
    return min(limits) if limits else int(settings.VERIHARM_GATEWAY_CALL_OUTPUT_TOKENS)
