"""API of the exports for other harnesses: a frozen release as an Inspect AI task or a Harbor
dataset (.tar.gz), by the export's name (`exports.HARNESS_EXPORTS`). Reading needs
`candidates.view_ranking`; a draft answers 409 Conflict, as the release's own downloads do."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.permissions import api_permission

from ..api import frozen_release_or_refusal
from ..downloads import gzip_download
from .exports import HARNESS_EXPORTS


class ReleaseHarnessExportApi(APIView):
    """The release as another harness runs it: an Inspect AI task (or a Harbor dataset), .tar.gz."""

    permission_classes = [api_permission("candidates.view_ranking")]
    harness = ""

    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY})
    def get(self, request: Request, pk: int) -> HttpResponse | Response:
        release = frozen_release_or_refusal(pk)
        if isinstance(release, Response):
            return release
        return gzip_download(*HARNESS_EXPORTS[self.harness].archive(release))
