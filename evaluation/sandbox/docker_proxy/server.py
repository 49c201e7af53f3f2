"""The proxy itself: each allowed request forwarded on its own connection to the engine with
``Connection: close`` (an exec's start hijacked, its streams piped both ways), every other one
answered with the reason; ``serve`` listens on a TCP port or a Unix socket."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable

from .policy import Policy, Refused
from .routing import check, match, parse_head

logger = logging.getLogger("veriharm.docker_proxy")

MAX_HEAD = 64 * 1024
MAX_JSON_BODY = 1024 * 1024
LOOKUP_TIMEOUT = 30.0


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
