"""/metrics: off unless VERIHARM_METRICS_TOKEN or VERIHARM_METRICS_ALLOWED_ADDRESSES is set, and
then only for a request bearing the token or coming from an allowed address (or network)."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from .metrics import DatabaseCollector

_DATABASE = CollectorRegistry(auto_describe=False)
_DATABASE.register(DatabaseCollector())


def _address_allowed(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for allowed in settings.VERIHARM_METRICS_ALLOWED_ADDRESSES:
        try:
            if ip in ipaddress.ip_network(allowed, strict=False):
                return True
        except ValueError:  # a misconfigured entry lets nobody in
            continue
    return False


def _token_given(request: Request) -> bool:
    token = settings.VERIHARM_METRICS_TOKEN
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    # Compared as bytes: compare_digest refuses str with characters beyond ASCII. WSGI hands a header
    # over decoded as latin-1, so encoding it back gives the bytes the client sent.
    sent = given.strip().encode("latin-1", errors="replace")
    return hmac.compare_digest(sent, token.encode("utf-8"))


class MetricsAccess(BasePermission):
    message = (
        "/metrics needs the bearer token VERIHARM_METRICS_TOKEN or an address in "
        "VERIHARM_METRICS_ALLOWED_ADDRESSES (off when neither is set)"
    )

    def has_permission(self, request: Any, view: Any) -> bool:
        return _token_given(request) or _address_allowed(request.META.get("REMOTE_ADDR", ""))


@extend_schema(exclude=True)  # Prometheus' format, not the API's
class MetricsView(APIView):
    authentication_classes: list[Any] = []  # a scraper has no session: the token or address is the check
    permission_classes = [MetricsAccess]

    def get(self, request: Request) -> HttpResponse:
        body = generate_latest(REGISTRY) + generate_latest(_DATABASE)
        return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
