"""A request as the proxy reads it: its head parsed (``parse_head``), the one API call it names
(``match`` against ``ROUTES``), and ``check``: whether the policy, and the engine asked about the
container it names, let it through."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from .policy import IMAGE_NAME, PID_MODE, REF, REF_CHARS, SANDBOX_LABEL, VERIFIER_VOLUME, Policy, Refused


@dataclass(frozen=True)
class Route:
    methods: frozenset[str]
    pattern: re.Pattern[str]
    # none: no further check; container/exec: the referenced container must be a sandbox;
    # image/volume: the name; create/exec/exec_start/volume_create: the JSON body; list: the query.
    check: str
    body: str = ""  # the Policy method checking the JSON body, if any


def _route(methods: str, pattern: str, check: str, body: str = "") -> Route:
    return Route(frozenset(methods.split("|")), re.compile(pattern), check, body)


ROUTES = (
    _route("GET|HEAD", r"/_ping", "none"),
    _route("GET", r"/version", "none"),
    _route("POST", r"/containers/create", "create", "check_create"),
    _route("GET", r"/containers/json", "list"),
    _route("GET", rf"/containers/{REF}/json", "container"),
    _route("POST", rf"/containers/{REF}/start", "container"),
    _route("DELETE", rf"/containers/{REF}", "container"),
    _route("GET|HEAD|PUT", rf"/containers/{REF}/archive", "container"),
    _route("POST", rf"/containers/{REF}/exec", "container", "check_exec"),
    _route("POST", rf"/exec/{REF}/start", "exec", "check_exec_start"),
    _route("GET", rf"/exec/{REF}/json", "exec"),
    _route("GET", rf"/images/{IMAGE_NAME}/json", "image"),
    _route("GET", r"/volumes/(?P<volume>[A-Za-z0-9][A-Za-z0-9_.-]*)", "volume"),
    _route("POST", r"/volumes/create", "none", "check_volume_create"),
)
VERSION_PREFIX = re.compile(r"/v[0-9]+(\.[0-9]+)?(?=/)")


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    path: str = ""
    query: dict[str, list[str]] = field(default_factory=dict)

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name]


def parse_head(head: bytes) -> Request:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes every byte
        raise Refused("unreadable request") from exc
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise Refused("malformed request line")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        if line[0] in " \t" or ":" not in line:
            raise Refused("malformed header")
        name, value = line.split(":", 1)
        if not re.fullmatch(r"[A-Za-z0-9-]+", name):
            raise Refused("malformed header name")
        headers.append((name, value.strip()))
    request = Request(parts[0], parts[1], parts[2], headers)
    split = urlsplit(request.target)
    if not request.target.startswith("/") or split.scheme or split.netloc:
        raise Refused("the request target must be a path")
    if "%" in split.path or "//" in split.path or "/." in split.path or "\\" in split.path:
        raise Refused("escapes and dot segments are not allowed in the path")
    request.path = VERSION_PREFIX.sub("", split.path, count=1)
    request.query = parse_qs(split.query)
    return request


def match(request: Request) -> tuple[Route, dict[str, str]]:
    for route in ROUTES:
        found = route.pattern.fullmatch(request.path)
        if found and request.method in route.methods:
            return route, found.groupdict()
    raise Refused(f"{request.method} {request.path} is not an API call the sandbox workers need")


Lookup = Callable[[str], Awaitable[tuple[int, dict]]]


async def check(
    policy: Policy, request: Request, route: Route, groups: dict[str, str], body: bytes | None, lookup: Lookup
) -> tuple[int, str] | None:
    """None when the request may go to the engine; (status, message) otherwise.

    `lookup(path)` GETs `path` from the engine and returns (status, JSON)."""
    try:
        data = None
        if route.body:
            try:
                data = json.loads(body or b"{}")
            except ValueError as exc:
                raise Refused("the body is not JSON") from exc
            getattr(policy, route.body)(data)
        if route.check == "create":
            # check_create let only container:<ref> through; that container must be a sandbox too.
            pid_mode = ((data or {}).get("HostConfig") or {}).get("PidMode")
            found = PID_MODE.fullmatch(pid_mode) if isinstance(pid_mode, str) else None
            if found:
                return await _sandbox_or_refusal(found["ref"], lookup)
        if route.check == "list":
            policy.check_list(request.query)
        elif route.check == "image":
            policy.check_image(groups["image"])
        elif route.check == "volume":
            if not VERIFIER_VOLUME.fullmatch(groups["volume"]):
                raise Refused(f"volume {groups['volume']!r} is not a verifier volume")
        elif route.check in ("container", "exec"):
            ref = groups["ref"]
            if route.check == "exec":
                status, state = await lookup(f"/exec/{ref}/json")
                if status != 200:
                    return status, f"No such exec instance: {ref}"
                ref = str(state.get("ContainerID", ""))
                if not re.fullmatch(REF_CHARS, ref):
                    raise Refused("exec without a container")
            return await _sandbox_or_refusal(ref, lookup)
    except Refused as refused:
        return 403, str(refused)
    return None


async def _sandbox_or_refusal(ref: str, lookup: Lookup) -> tuple[int, str] | None:
    """None when container ``ref`` is a sandbox (labelled so); the answer to give otherwise."""
    status, state = await lookup(f"/containers/{ref}/json")
    if status != 200:
        return status, f"No such container: {ref}"
    labels = (state.get("Config") or {}).get("Labels") or {}
    if labels.get(SANDBOX_LABEL) != "1":
        return 403, f"container {ref} is not a sandbox"
    return None
