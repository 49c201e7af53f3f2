"""The one upstream a trial's model gateway forwards to, and the checks on its configuration (pure).

An agent names its upstream in its configuration: the API flavour, the base URL (the API root with
its version, e.g. https://api.openai.com/v1 or https://api.anthropic.com/v1; for Gemini the root
alone, https://generativelanguage.googleapis.com, as its clients put the version in each path), the name of the
worker's environment variable holding the key, an optional price table and optional limits (concurrency, rate, retries, timeout, and the number of calls a
trial may make). The
key itself never appears in a configuration; the variable's name must start with
KEY_ENV_PREFIX so that no configuration can make the worker send any other variable anywhere
(DJANGO_SECRET_KEY, DATABASE_URL, a cloud token).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

KEY_ENV_PREFIX = "VERIHARM_AGENT_KEY_"
KEY_ENV_PATTERN = re.compile(r"^VERIHARM_AGENT_KEY_[A-Z0-9_]+$")


class Api:
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    ALL = (OPENAI, ANTHROPIC, GEMINI)


# Gemini's base URL is the API's root (https://generativelanguage.googleapis.com): its clients name
# the version in each path (/v1beta/models/...), which the gateway forwards as it is.
GEMINI_VERSION_SUFFIX = re.compile(r"/v\d+(alpha|beta)?\d*$")

# Keys of an upstream block (for an openai_compatible agent they sit in its config beside the loop's own).
UPSTREAM_KEYS = (
    "api",
    "base_url",
    "api_key_env",
    "prices",
    "max_concurrency",
    "requests_per_minute",
    "max_retries",
    "request_timeout",
    "max_calls",
)
MAX_CONCURRENCY = 64
MAX_REQUESTS_PER_MINUTE = 100_000
MAX_RETRIES = 10
MAX_CALLS = 100_000


class KeyMissing(Exception):
    """The variable the configuration names is not set in the worker's environment."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: Decimal
    output: Decimal

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        return (self.input * input_tokens + self.output * output_tokens) / Decimal(1_000_000)


@dataclass(frozen=True)
class Upstream:
    api: str
    base_url: str
    api_key_env: str = ""
    prices: dict[str, Price] = field(default_factory=dict, hash=False)
    # None: the worker's settings decide (VERIHARM_GATEWAY_*).
    max_concurrency: int | None = None
    requests_per_minute: int | None = None
    max_retries: int | None = None
    request_timeout: float = 120.0
    # The most requests one trial attempt may make of its gateway (None: the worker's setting).
    max_calls: int | None = None

    @property
    def key(self) -> str:
        """What identifies the endpoint for its concurrency and rate limits."""
        return f"{self.api} {self.base_url}"

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc.lower()

    def upstream_url(self, path: str, query: str = "") -> str:
        """`path` under the base URL (a route's upstream path), with a query string already checked."""
        return self.base_url + path + (f"?{query}" if query else "")

    def price_of(self, model: str) -> Price | None:
        return self.prices.get(model)

    def api_key(self) -> str:
        """The real key, read from the worker's environment at the moment of use (never stored)."""
        if not self.api_key_env:
            return ""
        # Checked again here, not only when the configuration was saved: a pinned configuration
        # written before the rule existed must not reach another variable either.
        if not KEY_ENV_PATTERN.match(self.api_key_env):
            raise KeyMissing(f"{self.api_key_env} does not start with {KEY_ENV_PREFIX}")
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise KeyMissing(f"environment variable {self.api_key_env} (the API key) is not set in the worker")
        return key


def check_base_url(value: Any, what: str = "base_url") -> str:
    """An http(s) URL with a host and no credentials, query or fragment; returned without a trailing slash."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be an http(s) URL")
    value = value.strip()
    try:
        parts = urlsplit(value)
        port = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"{what} {value!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{what} must use http or https, not {parts.scheme or 'no scheme'!r}: {value!r}")
    if not parts.hostname:
        raise ValueError(f"{what} {value!r} has no host")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError(f"{what} must not carry credentials (user:password@); name the key with api_key_env")
    if parts.query or parts.fragment:
        raise ValueError(f"{what} must not have a query string or fragment")
    del port
    return value.rstrip("/")


def check_key_env(value: Any) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or not value.startswith(KEY_ENV_PREFIX):
        raise ValueError(
            f"api_key_env must name a variable starting with {KEY_ENV_PREFIX} "
            f"(got {value!r}); no other variable of the worker is ever sent"
        )
    if not KEY_ENV_PATTERN.match(value):
        raise ValueError(f"api_key_env {value!r} may hold only A-Z, 0-9 and _ after {KEY_ENV_PREFIX}")
    return value


def _decimal(value: Any, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{what} must be a number (USD per million tokens)")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{what} must be a number (USD per million tokens), got {value!r}") from None
    if not number.is_finite() or number < 0:
        raise ValueError(f"{what} must be a non-negative number, got {value!r}")
    return number


def check_prices(value: Any) -> dict[str, Price]:
    if value in (None, {}):
        return {}
    if not isinstance(value, dict):
        raise ValueError('prices must map a model to {"input": USD, "output": USD} per million tokens')
    prices = {}
    for model, entry in value.items():
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise ValueError(f'prices[{model!r}] must be {{"input": USD, "output": USD}} per million tokens')
        prices[model] = Price(
            _decimal(entry["input"], f"prices[{model!r}].input"), _decimal(entry["output"], f"prices[{model!r}].output")
        )
    return prices


def _bounded_int(value: Any, what: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{what} must be a whole number between {low} and {high}")
    return value


def upstream_from_config(config: dict[str, Any], *, default_api: str | None = None) -> Upstream:
    """The upstream of a configuration block; ValueError naming what is wrong.

    `default_api` is the flavour a kind implies (the openai_compatible loop speaks chat
    completions); without one, `api` must be given.
    """
    api = config.get("api", default_api)
    if api is None:
        raise ValueError(f"the upstream needs its API flavour: api must be one of {', '.join(Api.ALL)}")
    if api not in Api.ALL:
        raise ValueError(f"api must be one of {', '.join(Api.ALL)}, got {api!r}")
    if default_api is not None and api != default_api:
        raise ValueError(f"this agent speaks the {default_api} API; api cannot be {api!r}")
    timeout = config.get("request_timeout", 120.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 3600:
        raise ValueError("request_timeout must be between 1 and 3600 seconds")
    base_url = check_base_url(config.get("base_url"))
    if api == Api.GEMINI and GEMINI_VERSION_SUFFIX.search(base_url):
        raise ValueError(
            f"base_url of the gemini API is its root without a version (e.g. "
            f"https://generativelanguage.googleapis.com): the clients add /v1beta themselves, got {base_url!r}"
        )
    return Upstream(
        api=api,
        base_url=base_url,
        api_key_env=check_key_env(config.get("api_key_env", "")),
        prices=check_prices(config.get("prices")),
        max_concurrency=_bounded_int(config.get("max_concurrency"), "max_concurrency", 1, MAX_CONCURRENCY),
        requests_per_minute=_bounded_int(
            config.get("requests_per_minute"), "requests_per_minute", 1, MAX_REQUESTS_PER_MINUTE
        ),
        max_retries=_bounded_int(config.get("max_retries"), "max_retries", 0, MAX_RETRIES),
        request_timeout=float(timeout),
        max_calls=_bounded_int(config.get("max_calls"), "max_calls", 1, MAX_CALLS),
    )
