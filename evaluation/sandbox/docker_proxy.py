"""An allow-listing proxy in front of the Docker engine, for workers that create sandboxes.

Whoever holds the Docker socket is root on the engine's host: one ``docker run --privileged -v
/:/host`` away. A sandbox worker only needs a few calls, on its own containers, so in a container
deployment it holds this proxy's address instead (``DOCKER_HOST=tcp://docker-proxy:2375``) and
only the proxy holds the socket. Run it as::

    python -m evaluation.sandbox.docker_proxy --listen 0.0.0.0:2375 --upstream /var/run/docker.sock \\
        --image 'veriharm-sandbox:*' [--bind-prefix /var/lib/veriharm/gateway ...]

(stdlib only; imports nothing of Django). What it lets through, and nothing else:

* ``GET|HEAD /_ping``, ``GET /version``;
* ``POST /containers/create`` of an allowed image (``--image``, shell patterns), labelled
  ``veriharm.sandbox=1``, with network mode ``none`` (or networking disabled) and no network
  attachment, not privileged, no added capabilities, devices, host namespaces, port bindings,
  sysctls or mounts, no PID namespace but a sandbox container's (``container:<ref>``, the
  snapshot helper), security options at most ``no-new-privileges``, and bind mounts only of the
  verifier volumes (``veriharm-verifier-<hex>``) or, read-only, of host paths under a
  ``--bind-prefix`` (the gateway's socket directory, the harness runtime): the HostConfig keys the
  backend sets are allowed, any other key must be unset;
* on containers labelled ``veriharm.sandbox=1`` only (the proxy asks the engine): inspect,
  start, remove, archive get/put/head, exec create (not privileged);
* on execs of such containers: start (never detached, so the engine hijacks the connection and
  no second request can follow on it) and inspect;
* ``GET /containers/json`` only with the label filter ``veriharm.sandbox=1``;
* ``GET /images/<allowed image>/json``; ``GET /volumes/veriharm-verifier-<hex>`` and
  ``POST /volumes/create`` of such a name with the local driver and no driver options.

Everything else (pulls, builds, networks, commits, other containers' inspect and their
environment, swarm, plugins...) is answered 403 with the reason, which the Docker SDK raises
as an ``APIError``. Each forwarded request goes on its own connection to the engine with
``Connection: close``, so the engine answers exactly the one request that was checked;
``Transfer-Encoding``, percent-escapes and dot segments in the path are refused.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import json
import logging
import os
import posixpath
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

logger = logging.getLogger("veriharm.docker_proxy")

SANDBOX_LABEL = "veriharm.sandbox"  # evaluation.sandbox.base.SANDBOX_LABEL (not imported: stdlib only)
VERIFIER_VOLUME = re.compile(r"veriharm-verifier-[0-9a-f]{8,64}")
# Container and exec references: ids, id prefixes, names.
REF_CHARS = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}"
REF = rf"(?P<ref>{REF_CHARS})"
IMAGE_NAME = r"(?P<image>[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,255})"
MAX_HEAD = 64 * 1024
MAX_JSON_BODY = 1024 * 1024
LOOKUP_TIMEOUT = 30.0

# HostConfig keys the backend sets (evaluation/sandbox/docker/container.py); any other must be unset/empty.
HOST_CONFIG_ALLOWED = {
    "Binds",
    "Tmpfs",
    "NetworkMode",
    "Memory",
    "MemorySwap",
    "NanoCpus",
    "PidsLimit",
    "Ulimits",
    "CapDrop",
    "SecurityOpt",
    "ReadonlyRootfs",
    "LogConfig",
    "AutoRemove",
    "ShmSize",
    "OomScoreAdj",
    "PidMode",
}
# A snapshot helper joins the PID namespace of the sandbox it reads (evaluation.sandbox.docker.snapshots.snapshot_helper).
PID_MODE = re.compile(rf"container:(?P<ref>{REF_CHARS})")
# Config keys of a container create; NetworkingConfig is checked on its own, any other must be empty.
CONFIG_ALLOWED = {
    "Image",
    "Cmd",
    "Entrypoint",
    "Env",
    "Labels",
    "Hostname",
    "Domainname",
    "WorkingDir",
    "User",
    "AttachStdin",
    "AttachStdout",
    "AttachStderr",
    "Tty",
    "OpenStdin",
    "StdinOnce",
    "NetworkDisabled",
    "StopSignal",
    "StopTimeout",
    "Volumes",
    "HostConfig",
    "NetworkingConfig",
    "Healthcheck",
    "ExposedPorts",
    "MacAddress",
    "Shell",
    "ArgsEscaped",
    "OnBuild",
}
SECURITY_OPTS_ALLOWED = {"no-new-privileges", "no-new-privileges:true", "no-new-privileges=true"}
EXEC_ALLOWED = {
    "AttachStdin",
    "AttachStdout",
    "AttachStderr",
    "Tty",
    "Cmd",
    "Env",
    "WorkingDir",
    "User",
    "Privileged",
    "DetachKeys",
    "ConsoleSize",
    "Container",
}


class Refused(Exception):
    """A request the policy does not allow (answered 403 with this message)."""


@dataclass(frozen=True)
class Policy:
    images: tuple[str, ...] = ("veriharm-sandbox:*",)
    bind_prefixes: tuple[str, ...] = ()

    def image_allowed(self, image: str) -> bool:
        return any(fnmatch.fnmatchcase(image, pattern) for pattern in self.images)

    def check_image(self, image: object) -> None:
        if not isinstance(image, str) or not self.image_allowed(image):
            raise Refused(f"image {image!r} is not one the sandboxes may use ({', '.join(self.images)})")

    def check_bind(self, bind: object) -> None:
        if not isinstance(bind, str):
            raise Refused(f"bind {bind!r} is not a string")
        parts = bind.split(":")
        if len(parts) not in (2, 3):
            raise Refused(f"bind {bind!r} is not source:target[:mode]")
        source, _target, mode = parts[0], parts[1], parts[2] if len(parts) == 3 else "rw"
        if VERIFIER_VOLUME.fullmatch(source):
            return
        if not source.startswith("/"):
            raise Refused(f"volume {source!r} is not a verifier volume")
        if posixpath.normpath(source) != source or "//" in source:
            raise Refused(f"bind source {source!r} is not a normalised path")
        if not any(source == prefix or source.startswith(prefix.rstrip("/") + "/") for prefix in self.bind_prefixes):
            raise Refused(f"host path {source!r} is outside the allowed bind prefixes")
        if "ro" not in mode.split(","):
            raise Refused(f"host path {source!r} may only be bound read-only")

    def check_create(self, body: object) -> None:
        if not isinstance(body, dict):
            raise Refused("container create body is not a JSON object")
        for key, value in body.items():
            if key not in CONFIG_ALLOWED and value not in (None, "", [], {}, False, 0):
                raise Refused(f"container option {key} is not allowed")
        self.check_image(body.get("Image"))
        labels = body.get("Labels") or {}
        if not isinstance(labels, dict) or labels.get(SANDBOX_LABEL) != "1":
            raise Refused(f"containers must be labelled {SANDBOX_LABEL}=1")
        endpoints = (
            (body.get("NetworkingConfig") or {}).get("EndpointsConfig")
            if isinstance(body.get("NetworkingConfig") or {}, dict)
            else True
        )
        if endpoints:
            raise Refused("containers may not be attached to a network")
        host = body.get("HostConfig") or {}
        if not isinstance(host, dict):
            raise Refused("HostConfig is not a JSON object")
        for key, value in host.items():
            if key not in HOST_CONFIG_ALLOWED and value not in (None, "", [], {}, False, 0):
                raise Refused(f"host option {key}={value!r} is not allowed")
        mode = host.get("NetworkMode") or ""
        if mode != "none" and not (mode in ("", "default") and body.get("NetworkDisabled") is True):
            raise Refused(f"network mode {mode!r} is not allowed (only none)")
        pid_mode = host.get("PidMode")
        if pid_mode and not (isinstance(pid_mode, str) and PID_MODE.fullmatch(pid_mode)):
            raise Refused(f"PidMode {pid_mode!r} is not allowed (only container:<a sandbox>)")
        for option in host.get("SecurityOpt") or []:
            if option not in SECURITY_OPTS_ALLOWED:
                raise Refused(f"security option {option!r} is not allowed")
        for bind in host.get("Binds") or []:
            self.check_bind(bind)

    def check_exec(self, body: object) -> None:
        if not isinstance(body, dict):
            raise Refused("exec body is not a JSON object")
        for key, value in body.items():
            if key not in EXEC_ALLOWED and value not in (None, "", [], {}, False, 0):
                raise Refused(f"exec option {key} is not allowed")
        if body.get("Privileged"):
            raise Refused("privileged execs are not allowed")

    def check_exec_start(self, body: object) -> None:
        if not isinstance(body, dict) or body.get("Detach"):
            raise Refused("execs must be started attached")

    def check_volume_create(self, body: object) -> None:
        if not isinstance(body, dict):
            raise Refused("volume create body is not a JSON object")
        name = body.get("Name")
        if not isinstance(name, str) or not VERIFIER_VOLUME.fullmatch(name):
            raise Refused(f"volume {name!r} is not a verifier volume")
        if body.get("Driver") not in (None, "", "local") or body.get("DriverOpts"):
            raise Refused("volumes must use the local driver without options")

    @staticmethod
    def check_list(query: dict[str, list[str]]) -> None:
        try:
            filters = json.loads(query.get("filters", ["{}"])[-1])
        except ValueError as exc:
            raise Refused("unreadable filters") from exc
        labels = filters.get("label") if isinstance(filters, dict) else None
        wanted = f"{SANDBOX_LABEL}=1"
        if not (
            labels == [wanted]
            or (isinstance(labels, list) and wanted in labels)
            or (isinstance(labels, dict) and labels.get(wanted) is True)
        ):
            raise Refused(f"container lists must filter on the label {wanted}")


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


class Proxy:
    def __init__(self, policy: Policy, upstream: str) -> None:
        self.policy = policy
        self.upstream = upstream  # a Unix socket path, or host:port (tests)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.upstream.startswith("/"):
            return await asyncio.open_unix_connection(self.upstream)
        host, port = self.upstream.rsplit(":", 1)
        return await asyncio.open_connection(host, int(port))

    async def lookup(self, path: str) -> tuple[int, dict]:
        """GET `path` from the engine (HTTP/1.0: the answer ends with the connection)."""

        async def get() -> tuple[int, dict]:
            reader, writer = await self._connect()
            try:
                writer.write(f"GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode())
                await writer.drain()
                raw = await reader.read()
            finally:
                writer.close()
            head, _, payload = raw.partition(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            try:
                return status, json.loads(payload) if status == 200 else {}
            except ValueError:
                return 502, {}

        return await asyncio.wait_for(get(), LOOKUP_TIMEOUT)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except Exception:
            logger.exception("docker proxy: request failed")
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        try:
            request = parse_head(head[:-4])
            if request.header("transfer-encoding"):
                raise Refused("Transfer-Encoding is not accepted; send a Content-Length")
            lengths = request.header("content-length")
            if len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
                raise Refused("bad Content-Length")
            length = int(lengths[0]) if lengths else 0
            route, groups = match(request)
        except Refused as refused:
            logger.warning("docker proxy refused: %s", refused)
            await _answer(writer, 403, str(refused))
            return
        body = None
        if route.body:
            if length > MAX_JSON_BODY:
                await _answer(writer, 413, "body too large")
                return
            body = await reader.readexactly(length)
        verdict = await check(self.policy, request, route, groups, body, self.lookup)
        if verdict is not None:
            status, message = verdict
            if status == 403:
                logger.warning("docker proxy refused %s %s: %s", request.method, request.path, message)
            await _answer(writer, status, message)
            return
        hijack = route.check == "exec" and request.path.endswith("/start")
        up_reader, up_writer = await self._connect()
        try:
            headers = [(k, v) for k, v in request.headers if k.lower() not in HOP_BY_HOP]
            headers.append(("Connection", "Upgrade") if hijack else ("Connection", "close"))
            if hijack:
                headers.append(("Upgrade", "tcp"))
            if body is not None:
                headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
                headers.append(("Content-Length", str(len(body))))
            up_writer.write(
                f"{request.method} {request.target} {request.version}\r\n".encode("latin-1")
                + "".join(f"{k}: {v}\r\n" for k, v in headers).encode("latin-1")
                + b"\r\n"
            )
            if body is not None:
                up_writer.write(body)
            else:
                await _copy_exactly(reader, up_writer, length)
            await up_writer.drain()
            if hijack:
                # The engine hijacked the connection for the exec's streams: raw both ways.
                # It ends when the engine ends the stream (the exec is over); the client's side
                # may have ended before (its stdin, half-closed).
                to_engine = asyncio.ensure_future(_pipe(reader, up_writer))
                try:
                    await _pipe(up_reader, writer)
                finally:
                    to_engine.cancel()
            else:
                # One answer, then the engine closes (Connection: close); nothing else is read
                # from the client on this connection.
                await _pipe(up_reader, writer)
        finally:
            up_writer.close()


HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
    "transfer-encoding",
}


async def _answer(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reason = {403: "Forbidden", 404: "Not Found", 413: "Payload Too Large"}.get(status, "Error")
    payload = json.dumps({"message": f"veriharm docker proxy: {message}" if status == 403 else message}).encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        f"Connection: close\r\n\r\n".encode()
        + payload
    )
    await writer.drain()


async def _copy_exactly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, length: int) -> None:
    while length > 0:
        chunk = await reader.read(min(length, 1 << 16))
        if not chunk:
            raise ConnectionError("the client closed before sending its whole body")
        writer.write(chunk)
        await writer.drain()
        length -= len(chunk)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then pass the half-close on (an exec's stdin ends this way)."""
    try:
        while chunk := await reader.read(1 << 16):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def serve(policy: Policy, upstream: str, listen: str, ready: Callable[[int], None] | None = None) -> None:
    proxy = Proxy(policy, upstream)
    if listen.startswith("/"):
        with _umask(0o117):
            server = await asyncio.start_unix_server(proxy.handle, listen, limit=MAX_HEAD)
        port = 0
    else:
        host, port_text = listen.rsplit(":", 1)
        server = await asyncio.start_server(proxy.handle, host, int(port_text), limit=MAX_HEAD)
        port = server.sockets[0].getsockname()[1]
    logger.info(
        "docker proxy on %s (port %s) -> %s; images %s; bind prefixes %s",
        listen,
        port,
        upstream,
        ", ".join(policy.images),
        ", ".join(policy.bind_prefixes) or "none",
    )
    if ready:
        ready(port)
    async with server:
        await server.serve_forever()


class _umask:
    def __init__(self, mask: int) -> None:
        self.mask = mask

    def __enter__(self) -> None:
        self.old = os.umask(self.mask)

    def __exit__(self, *exc: object) -> None:
        os.umask(self.old)


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--listen",
        default=os.environ.get("VERIHARM_PROXY_LISTEN", "0.0.0.0:2375"),
        help="host:port or a Unix socket path",
    )
    parser.add_argument("--upstream", default=os.environ.get("VERIHARM_PROXY_UPSTREAM", "/var/run/docker.sock"))
    parser.add_argument(
        "--image",
        action="append",
        default=None,
        help="images sandboxes may use (shell pattern; VERIHARM_PROXY_IMAGES, comma-separated)",
    )
    parser.add_argument(
        "--bind-prefix",
        action="append",
        default=None,
        help="host paths that may be bound read-only (VERIHARM_PROXY_BIND_PREFIXES)",
    )
    args = parser.parse_args(argv)
    images = args.image or _split(os.environ.get("VERIHARM_PROXY_IMAGES")) or ["veriharm-sandbox:*"]
    prefixes = args.bind_prefix or _split(os.environ.get("VERIHARM_PROXY_BIND_PREFIXES"))
    for prefix in prefixes:
        if not prefix.startswith("/") or posixpath.normpath(prefix) != prefix or prefix == "/":
            parser.error(f"bind prefix {prefix!r} must be a normalised absolute path other than /")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    try:
        asyncio.run(serve(Policy(tuple(images), tuple(prefixes)), args.upstream, args.listen))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
