"""The web tier's request latency, as a Prometheus histogram read by /metrics.

Labelled by route name (never by path: paths carry ids and would make a series per object) and by
the status class. Counted per process: behind gunicorn each worker process keeps its own, and a
scrape reads the one process that answers it (docs/deployment.md, "More than one host")."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from prometheus_client import Histogram

REQUEST_SECONDS = Histogram(
    "veriharm_http_request_duration_seconds",
    "Seconds from a request's arrival to its response, by route and status class",
    ["route", "method", "status"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
# Methods outside these are counted under "other", so a client cannot invent series.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestLatencyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = (match.view_name if match is not None else "") or "unmatched"
        method = request.method if request.method in METHODS else "other"
        REQUEST_SECONDS.labels(route, method, f"{response.status_code // 100}xx").observe(time.perf_counter() - started)
        return response
