"""The generation API (admins only): launch a run, read it with its searches, cancel it."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import API_ERRORS
from veriharm_site.permissions import api_permission, signed_in_user

from .launch import generation_cancel, generation_launch
from .selectors import RunDetail, generation_run_detail
from .serializers import GenerationLaunchSerializer, GenerationRunSerializer

RUN = api_permission("evaluation.run_evaluations")


def _detail(pk: int) -> RunDetail:
    detail = generation_run_detail(pk)
    if detail is None:
        raise NotFound("no such generation run")
    return detail


class GenerationLaunchApi(APIView):
    """Launch a generation run: one search per (target agent, source task, proposer)."""

    permission_classes = [RUN]

    @extend_schema(
        request=GenerationLaunchSerializer, responses={201: GenerationRunSerializer, 400: API_ERRORS, 409: API_ERRORS}
    )
    def post(self, request: Request) -> Response:
        payload = GenerationLaunchSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        run = generation_launch(
            name=data["name"],
            selection=dict(data["selection"]),
            agent_ids=data["agents"],
            proposers=data["proposers"],
            judges=data["judges"],
            budget=data.get("budget"),
            perturbations=data.get("perturbations"),
            budget_usd=data.get("budget_usd"),
            backend=data.get("backend"),
            created_by=signed_in_user(request),
            reference_check=data.get("reference_check", True),
        )
        return Response(GenerationRunSerializer(_detail(run.pk)).data, status=status.HTTP_201_CREATED)


class GenerationRunApi(APIView):
    permission_classes = [RUN]

    @extend_schema(responses={200: GenerationRunSerializer, 404: API_ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        return Response(GenerationRunSerializer(_detail(pk)).data)


class GenerationCancelApi(APIView):
    """Stop a run: queued searches end now, running ones between two steps."""

    permission_classes = [RUN]

    @extend_schema(request=None, responses={200: GenerationRunSerializer, 404: API_ERRORS, 409: API_ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        generation_cancel(pk)
        return Response(GenerationRunSerializer(_detail(pk)).data)
