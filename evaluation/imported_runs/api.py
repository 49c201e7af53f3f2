"""Import another harness's log as a run, through the API."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import API_ERRORS
from veriharm_site.permissions import api_permission, signed_in_user

from ..runs.serializers import RunSerializer
from .readers import read_upload
from .serializers import RunImportRequestSerializer
from .services import run_import


class RunImportApi(APIView):
    """A new run from another harness's results; refused whole, naming what differs, otherwise."""

    permission_classes = [api_permission("evaluation.run_evaluations")]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": RunImportRequestSerializer},
        responses={201: RunSerializer, 400: API_ERRORS},
        operation_id="evaluation_runs_import",
    )
    def post(self, request: Request) -> Response:
        payload = RunImportRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        imported = read_upload(data["harness"], data["log"].name, data["log"].read())
        run = run_import(data["release"], imported, user=signed_in_user(request), name=data["name"])
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)
