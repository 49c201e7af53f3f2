"""A frozen release's downloads as HTTP responses, the same for its pages and its API: the JSONL
export (the bytes its checksum covers) and the .tar.gz archives (the bundle, other harnesses'
exports). Also the one lookup of a release by id and the one reason a draft has no download."""

from __future__ import annotations

from django.http import Http404, HttpResponse, StreamingHttpResponse

from ..models import Release
from .selectors import release_get, release_jsonl_lines


def release_or_none(pk: int) -> Release | None:
    try:
        return release_get(pk)
    except Release.DoesNotExist:
        return None


def release_or_404(pk: int) -> Release:
    release = release_or_none(pk)
    if release is None:
        raise Http404("No such release.")
    return release


def draft_message(release: Release) -> str:
    return f"{release.label} is a draft: freeze it to export it."


def jsonl_download(release: Release) -> StreamingHttpResponse:
    response = StreamingHttpResponse(release_jsonl_lines(release), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{release.name}-{release.version}.jsonl"'
    return response


def gzip_download(name: str, data: bytes) -> HttpResponse:
    response = HttpResponse(data, content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
