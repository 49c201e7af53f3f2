"""What a trial's gateway serves for each API flavour, and how each request target is read (pure).

A route is either a model call, forwarded to the upstream (chat completions, responses, messages,
Gemini's generateContent and streamGenerateContent), or one of the requests a harness makes beside
its model calls, which the gateway answers itself without forwarding anything: Claude Code's
`HEAD /api/hello`, the model lists and the token counts (`answers.py`). Every other method and
path is refused. A query string is accepted only where the flavour's own clients send one, and
only with the parameters they send: Anthropic's SDK adds `?beta=true` to its beta messages calls,
Gemini's clients `?alt=sse` to a streamed call and sometimes `?key=` (dropped: the gateway sends
the real key in `x-goog-api-key`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, urlsplit

from .config import Api

# Model names as the Gemini API spells them in a path (gemini-2.5-pro, gemini-2.0-flash-001).
GEMINI_MODEL = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_GEMINI_CALL = re.compile(rf"^/v1beta/models/(?P<model>{GEMINI_MODEL}):(?P<action>[A-Za-z]+)$")
_GEMINI_ACTIONS = {
    "generateContent": "generate_content",
    "streamGenerateContent": "stream_generate_content",
    "countTokens": "count_tokens",
}


class Local:
    """The names of the requests the gateway answers itself (recorded with these route names)."""

    HELLO = "hello"
    MODELS = "models"
    COUNT_TOKENS = "count_tokens"
    ALL = (HELLO, MODELS, COUNT_TOKENS)


@dataclass(frozen=True)
class Route:
    # The route name recorded on the call.
    name: str
    # The path under the upstream's base URL; empty for a request the gateway answers itself.
    upstream_path: str = ""
    # Gemini names the model in the path, not the body.
    model: str = ""
    # Gemini streams by its method's name, not a body field.
    streamed: bool = False
    # What of the client's query string goes upstream (already checked).
    query: str = ""

    @property
    def local(self) -> bool:
        return not self.upstream_path


class RouteRefused(Exception):
    def __init__(self, status: int, kind: str, message: str, allow: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.allow = allow


# (method, path) -> route, for the flavours whose paths are fixed.
_FIXED: dict[str, dict[tuple[str, str], Route]] = {
    Api.OPENAI: {
        ("POST", "/v1/chat/completions"): Route("chat_completions", "/chat/completions"),
        ("POST", "/v1/responses"): Route("responses", "/responses"),
        ("GET", "/v1/models"): Route(Local.MODELS),
    },
    Api.ANTHROPIC: {
        ("POST", "/v1/messages"): Route("messages", "/messages"),
        ("POST", "/v1/messages/count_tokens"): Route(Local.COUNT_TOKENS),
        ("GET", "/v1/models"): Route(Local.MODELS),
        ("HEAD", "/api/hello"): Route(Local.HELLO),
    },
    Api.GEMINI: {
        ("GET", "/v1beta/models"): Route(Local.MODELS),
    },
}
_GEMINI_SERVED = (
    "POST /v1beta/models/<model>:generateContent, POST /v1beta/models/<model>:streamGenerateContent?alt=sse, "
    "POST /v1beta/models/<model>:countTokens"
)
# The query parameters each route accepts: name -> the values allowed (None: any, never forwarded).
_QUERIES: dict[tuple[str, str], dict[str, frozenset[str] | None]] = {
    (Api.ANTHROPIC, "messages"): {"beta": frozenset({"true"})},
    (Api.ANTHROPIC, Local.COUNT_TOKENS): {"beta": frozenset({"true"})},
    # The SDK's model list pages (ignored: the gateway lists its few models at once).
    (Api.ANTHROPIC, Local.MODELS): {"beta": frozenset({"true"}), "limit": None, "after_id": None, "before_id": None},
    (Api.GEMINI, "generate_content"): {"alt": frozenset({"json"}), "key": None},
    (Api.GEMINI, "stream_generate_content"): {"alt": frozenset({"sse"}), "key": None},
    (Api.GEMINI, Local.COUNT_TOKENS): {"key": None},
    (Api.GEMINI, Local.MODELS): {"key": None, "pageSize": None, "pageToken": None},
}
# What is passed on of an accepted query (the key never is).
_FORWARDED_QUERY = frozenset({"beta", "alt"})


def served(api: str) -> str:
    """The routes of a flavour, for the refusal's message."""
    fixed = ", ".join(f"{method} {path}" for method, path in _FIXED[api])
    return f"{_GEMINI_SERVED}, {fixed}" if api == Api.GEMINI else fixed


def _match(api: str, path: str) -> dict[str, Route]:
    """The routes at `path`, by method."""
    routes = {method: route for (method, at), route in _FIXED[api].items() if at == path}
    if api == Api.GEMINI and not routes:
        found = _GEMINI_CALL.match(path)
        if found and found["action"] in _GEMINI_ACTIONS:
            name = _GEMINI_ACTIONS[found["action"]]
            # Gemini's base URL is the API's root: the client's own path, version included, goes upstream.
            upstream = "" if name == Local.COUNT_TOKENS else path
            routes["POST"] = Route(name, upstream, model=found["model"], streamed=name == "stream_generate_content")
    return routes


def _checked_query(api: str, route: Route, query: str) -> str:
    """The query string to forward, after checking every parameter; RouteRefused naming a bad one."""
    allowed = _QUERIES.get((api, route.name), {})
    if not query:
        if route.name == "stream_generate_content":
            raise RouteRefused(
                400, "invalid_request_error", "streamGenerateContent needs ?alt=sse (server-sent events)"
            )
        return ""
    if not allowed:
        raise RouteRefused(400, "invalid_request_error", f"{route.name} takes no query string, got {query[:200]!r}")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise RouteRefused(400, "invalid_request_error", f"the query string {query[:200]!r} is malformed") from None
    seen: dict[str, str] = {}
    for name, value in pairs:
        if name not in allowed:
            raise RouteRefused(
                400,
                "invalid_request_error",
                f"{route.name} takes only the query parameter(s) {', '.join(sorted(allowed))}, not {name[:50]!r}",
            )
        if name in seen:
            raise RouteRefused(400, "invalid_request_error", f"the query parameter {name!r} is given twice")
        values = allowed[name]
        if values is not None and value not in values:
            raise RouteRefused(
                400,
                "invalid_request_error",
                f"the query parameter {name}={value[:50]!r} must be {' or '.join(sorted(values))}",
            )
        seen[name] = value
    if route.name == "stream_generate_content" and seen.get("alt") != "sse":
        raise RouteRefused(400, "invalid_request_error", "streamGenerateContent needs ?alt=sse (server-sent events)")
    return "&".join(f"{name}={value}" for name, value in seen.items() if name in _FORWARDED_QUERY)


def route_for(api: str, method: str, target: str) -> Route:
    """The route a request target names (origin-form, printable: checked before), or RouteRefused."""
    parts = urlsplit(target)
    routes = _match(api, parts.path)
    if not routes:
        raise RouteRefused(404, "not_found_error", f"the gateway serves only {served(api)}, not {parts.path[:200]!r}")
    route = routes.get(method)
    if route is None:
        allow = ", ".join(sorted(routes))
        raise RouteRefused(
            405, "invalid_request_error", f"{parts.path[:200]} takes {allow} only, not {method[:20]}", allow=allow
        )
    return replace(route, query=_checked_query(api, route, parts.query))
