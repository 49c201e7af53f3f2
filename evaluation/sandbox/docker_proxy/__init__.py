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

The package: ``policy`` (``Policy``: what a container create, an exec or a volume may ask),
``routing`` (the request head read, the API calls allowed, ``check`` of one request against the
policy and the engine), ``server`` (``Proxy``: one connection to the engine per request, an exec's
streams piped; ``serve``), ``cli`` (the command line, which ``__main__`` runs).
"""

from .policy import Policy, Refused
from .routing import Request, Route, check, match, parse_head
from .server import Proxy, serve

__all__ = ["Policy", "Proxy", "Refused", "Request", "Route", "check", "match", "parse_head", "serve"]
