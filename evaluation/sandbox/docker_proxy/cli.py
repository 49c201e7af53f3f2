"""An allow-listing proxy in front of the Docker engine, for workers that create sandboxes.

Its command line: ``python -m evaluation.sandbox.docker_proxy --listen ... --upstream ...``, each
option also read from the environment (``VERIHARM_PROXY_*``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import posixpath
import sys
from collections.abc import Sequence

from .policy import Policy
from .server import serve


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.sandbox.docker_proxy", description=__doc__.split("\n\n")[0]
    )
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
