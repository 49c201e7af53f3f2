"""A proposer's or judge's model endpoint as a run configures it, and its checks (pure).

    {"name": "opus-judge", "api": "anthropic", "route": "messages",
     "base_url": "https://api.anthropic.com/v1", "api_key_env": "VERIHARM_AGENT_KEY_ANTHROPIC",
     "model": "claude-...", "prices": {"claude-...": {"input": 15, "output": 75}},
     "max_tokens": 8000, "temperature": 0.0, "max_reply_retries": 2}

The upstream part (api, base_url, api_key_env, prices and the limits) is the agents' own upstream
block, checked by `evaluation.gateway.config.upstream_from_config`: a key is named by its variable,
read when a call is made and never stored, and budgets, prices and retries work as for agents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.gateway.config import UPSTREAM_KEYS, Api, Upstream, upstream_from_config

# Each flavour's routes: the name in a configuration -> the path the gateway serves.
ROUTES: dict[str, dict[str, str]] = {
    Api.OPENAI: {"chat_completions": "/v1/chat/completions", "responses": "/v1/responses"},
    Api.ANTHROPIC: {"messages": "/v1/messages"},
}
ENDPOINT_KEYS = ("name", "route", "model", "max_tokens", "temperature", "max_reply_retries")
MAX_NAME = 200  # stored beside a candidate's provenance and judgement in 200-character columns
DEFAULT_MAX_TOKENS = 8_000  # a proposal holds a task, a test and two scripts; Anthropic requires a bound
MAX_OUTPUT_TOKENS = 128_000
DEFAULT_REPLY_RETRIES = 2
MAX_REPLY_RETRIES = 5


@dataclass(frozen=True)
class Endpoint:
    name: str
    upstream: Upstream
    route: str  # chat_completions | responses | messages
    model: str
    max_tokens: int = DEFAULT_MAX_TOKENS
    # None: the model's own default (several reasoning models refuse any other value).
    temperature: float | None = None
    max_reply_retries: int = DEFAULT_REPLY_RETRIES

    @property
    def path(self) -> str:
        return ROUTES[self.upstream.api][self.route]


def _text(config: Mapping[str, Any], key: str, limit: int) -> str:
    value = config.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} is required: a non-empty string")
    if len(value) > limit:
        raise ValueError(f"{key} must be at most {limit} characters")
    return value.strip()


def _whole(config: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{key} must be a whole number from {low} to {high}, got {value!r}")
    return value


def endpoint_from_config(config: Mapping[str, Any]) -> Endpoint:
    """The endpoint a configuration describes; ValueError naming the field that is wrong."""
    if not isinstance(config, Mapping):
        raise ValueError("an endpoint configuration must be an object")
    unknown = sorted(set(config) - set(ENDPOINT_KEYS) - set(UPSTREAM_KEYS))
    if unknown:
        known = ", ".join(ENDPOINT_KEYS + UPSTREAM_KEYS)
        raise ValueError(f"unknown field(s) {', '.join(map(str, unknown))} (known: {known})")
    name = _text(config, "name", MAX_NAME)
    if config.get("api") in Api.ALL and config.get("api") not in ROUTES:
        # The gateway speaks it, but proposers and judges are asked in chat or messages shapes only.
        raise ValueError(f"api must be one of {', '.join(ROUTES)} for a proposer or judge, got {config.get('api')!r}")
    upstream = upstream_from_config({key: config[key] for key in UPSTREAM_KEYS if key in config})
    routes = ROUTES[upstream.api]
    route = config.get("route")
    if not isinstance(route, str) or route not in routes:
        raise ValueError(f"route must be one of {', '.join(routes)} for api {upstream.api!r}, got {route!r}")
    temperature = config.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2
    ):
        raise ValueError(f"temperature must be a number from 0 to 2, or left out, got {temperature!r}")
    return Endpoint(
        name=name,
        upstream=upstream,
        route=route,
        model=_text(config, "model", MAX_NAME),
        max_tokens=_whole(config, "max_tokens", DEFAULT_MAX_TOKENS, 1, MAX_OUTPUT_TOKENS),
        temperature=None if temperature is None else float(temperature),
        max_reply_retries=_whole(config, "max_reply_retries", DEFAULT_REPLY_RETRIES, 0, MAX_REPLY_RETRIES),
    )
