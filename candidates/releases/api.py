"""API of releases: the list and a new draft, one release (its description changed, a draft deleted),
its freeze, its downloads (JSONL, the runnable bundle) and a bundle's import.

Reading needs `candidates.view_ranking`, writing `candidates.curate`. A frozen release answers
every attempt to change it with 409 Conflict and a message, and stays unchanged. The exports for
other harnesses are in `candidates.releases.interop.api`.
"""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import API_ERRORS, refusal
from veriharm_site.api_paging import CheckedPageNumberPagination, paged
from veriharm_site.permissions import api_permission, api_read_or_write_permission, signed_in_user

from ..models import Release
from . import selectors
from . import services as releases
from .bundle import release_bundle
from .bundle_import import release_bundle_import
from .downloads import draft_message, gzip_download, jsonl_download, release_or_none
from .serializers import (
    BundleImportRequestSerializer,
    ReleaseCreateSerializer,
    ReleaseDetailSerializer,
    ReleaseFreezeRequestSerializer,
    ReleaseSerializer,
    ReleaseUpdateSerializer,
)

READ = "candidates.view_ranking"
CURATE = "candidates.curate"


def release_not_found() -> Response:
    return refusal("No release.", field="id", code=status.HTTP_404_NOT_FOUND)


def frozen_release_or_refusal(pk: int) -> Release | Response:
    """The frozen release to download, or the refusal: 404 without it, 409 for a draft."""
    release = release_or_none(pk)
    if release is None:
        return release_not_found()
    if not release.is_frozen:
        return refusal(draft_message(release), code=status.HTTP_409_CONFLICT)
    return release


class ReleaseListApi(APIView):
    """Releases by name, newest first, a page at a time (GET); a new draft (POST)."""

    permission_classes = [api_read_or_write_permission(READ, CURATE)]
    pagination_class = CheckedPageNumberPagination

    @extend_schema(responses=ReleaseSerializer(many=True))
    def get(self, request: Request) -> Response:
        return paged(request, self, selectors.release_list(), lambda page: ReleaseSerializer(page, many=True).data)

    @extend_schema(request=ReleaseCreateSerializer, responses={201: ReleaseSerializer})
    def post(self, request: Request) -> Response:
        payload = ReleaseCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        release = releases.release_create(user=signed_in_user(request), **payload.validated_data)
        return Response(ReleaseSerializer(release).data, status=status.HTTP_201_CREATED)


class ReleaseDetailApi(APIView):
    """A release with its items; a draft's description may change and a draft may be deleted."""

    permission_classes = [api_read_or_write_permission(READ, CURATE)]

    @extend_schema(responses=ReleaseDetailSerializer, operation_id="releases_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        release = release_or_none(pk)
        if release is None:
            return release_not_found()
        return Response(ReleaseDetailSerializer(release).data)

    @extend_schema(request=ReleaseUpdateSerializer, responses=ReleaseSerializer)
    def patch(self, request: Request, pk: int) -> Response:
        if release_or_none(pk) is None:
            return release_not_found()
        payload = ReleaseUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        release = releases.release_update(pk, description=payload.validated_data["description"])
        return Response(ReleaseSerializer(release).data)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        if release_or_none(pk) is None:
            return release_not_found()
        releases.release_delete(pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReleaseFreezeApi(APIView):
    """Freeze a draft with the approved set as it is now."""

    permission_classes = [api_permission(CURATE)]

    @extend_schema(request=ReleaseFreezeRequestSerializer, responses={200: ReleaseDetailSerializer, 400: API_ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        if release_or_none(pk) is None:
            return release_not_found()
        payload = ReleaseFreezeRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        release = releases.release_freeze(
            pk,
            user=signed_in_user(request),
            acknowledge_human_verdict=payload.validated_data["acknowledge_human_verdict"],
            acknowledge_synthetic=payload.validated_data["acknowledge_synthetic"],
        )
        return Response(ReleaseDetailSerializer(release).data)


class ReleaseJsonlApi(APIView):
    """The release in the pipeline format: the bytes its checksum covers."""

    permission_classes = [api_permission(READ)]

    @extend_schema(responses={(200, "application/x-ndjson"): OpenApiTypes.STR}, operation_id="releases_export_jsonl")
    def get(self, request: Request, pk: int) -> StreamingHttpResponse | Response:
        release = frozen_release_or_refusal(pk)
        if isinstance(release, Response):
            return release
        return jsonl_download(release)


class ReleaseBundleApi(APIView):
    """The runnable bundle (.tar.gz): per instance the task, both tests and the environment."""

    permission_classes = [api_permission(READ)]

    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY}, operation_id="releases_bundle")
    def get(self, request: Request, pk: int) -> HttpResponse | Response:
        release = frozen_release_or_refusal(pk)
        if isinstance(release, Response):
            return release
        return gzip_download(*release_bundle(release))


class BundleImportApi(APIView):
    """Import a release bundle: its candidates, then the release, frozen; all or nothing."""

    permission_classes = [api_permission(CURATE, "candidates.import_pipeline")]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": BundleImportRequestSerializer},
        responses={201: ReleaseSerializer, 200: ReleaseSerializer, 400: API_ERRORS},
    )
    def post(self, request: Request) -> Response:
        payload = BundleImportRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        summary = release_bundle_import(
            payload.validated_data["bundle"],
            user=signed_in_user(request),
            acknowledge_human_verdict=payload.validated_data["acknowledge_human_verdict"],
        )
        code = status.HTTP_201_CREATED if summary.release_created else status.HTTP_200_OK
        body = ReleaseSerializer(summary.release).data | {
            "candidates_created": summary.candidates_created,
            "candidates_already_current": summary.candidates_already_current,
        }
        return Response(body, status=code)
