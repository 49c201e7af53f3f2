"""API of the import: upload pipeline files for a background import (202 with the job), then read
the job's status, progress and result. Both need `candidates.import_pipeline`."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import API_ERRORS
from veriharm_site.permissions import api_permission, signed_in_user

from ..models import ImportJob
from ..pool.selectors import import_job_get
from . import import_job_create
from .selectors import import_job_state
from .serializers import ImportJobSerializer, ImportRequestSerializer


class ImportApi(APIView):
    """Upload pipeline files for a background import, all or nothing: 202 with the job and its
    status URL; the job ends imported (with its counts) or refused (with every bad line named)."""

    permission_classes = [api_permission("candidates.import_pipeline")]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": ImportRequestSerializer}, responses={202: ImportJobSerializer, 400: API_ERRORS}
    )
    def post(self, request: Request) -> Response:
        payload = ImportRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        job = import_job_create(
            user=signed_in_user(request),
            uploads=payload.validated_data["files"],
            replace=payload.validated_data["replace"],
        )
        data = ImportJobSerializer(import_job_state(job), context={"request": request}).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["status_url"]})


class ImportJobApi(APIView):
    """An import job's status, progress and result."""

    permission_classes = [api_permission("candidates.import_pipeline")]

    @extend_schema(responses={200: ImportJobSerializer})
    def get(self, request: Request, pk: int) -> Response:
        try:
            job = import_job_get(pk)
        except ImportJob.DoesNotExist:
            raise NotFound("No import job with this id.") from None
        return Response(ImportJobSerializer(import_job_state(job), context={"request": request}).data)
