"""The stylesheet of the highlighted code every page with a diff or a harm test shows."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from . import highlight


def highlight_css(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(highlight.stylesheet(), content_type="text/css")
    response["Cache-Control"] = "max-age=86400"
    return response
