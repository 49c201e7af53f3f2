"""Upstreams answered inside the worker: named httpx transports for the trial's gateway.

An agent's gateway block names one by its base URL's host, a name under the reserved `.invalid`
domain (RFC 2606: no resolver answers it, so such an upstream is never reached over a network). The
gateway then forwards to the registered transport in the worker's own process, with its key and
accounts as for any upstream: the sandbox still sees only the dummy key and the gateway's socket.
Whoever provides one registers it at start-up (`upstream_transport_register`, from an
AppConfig.ready: the demo's scripted model), so this package imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from evaluation.gateway import Upstream

RESERVED_DOMAIN = ".invalid"

_TRANSPORTS: dict[str, Callable[[], httpx.BaseTransport]] = {}


def upstream_transport_register(host: str, transport: Callable[[], httpx.BaseTransport]) -> None:
    """Answer upstreams whose base URL's host is `host` with `transport()` (one per gateway)."""
    if not host.endswith(RESERVED_DOMAIN) or host != host.lower():
        raise ValueError(f"an upstream transport's name is a lower-case host under {RESERVED_DOMAIN}, not {host!r}")
    _TRANSPORTS[host] = transport


def upstream_transport(upstream: Upstream) -> httpx.BaseTransport | None:
    """The registered transport of this upstream, or None: the network, as usual."""
    factory = _TRANSPORTS.get(upstream.host)
    return factory() if factory is not None else None
