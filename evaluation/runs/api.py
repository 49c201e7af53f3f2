"""The runs API: one view per endpoint, each reading through a selector or writing through a service,
its output serializer building the response."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.models import Run
from evaluation.runs import exports, metric_selectors, model_usage
from evaluation.runs import selectors as run_selectors
from evaluation.runs.launch import run_cancel, run_launch, run_rerun
from evaluation.runs.queries import PairedComparisonApiQuery, RunTrialsQuery
from evaluation.runs.retries import run_retry_unscored
from evaluation.runs.serializers import (
    AgentSerializer,
    LaunchSerializer,
    PairedComparisonSerializer,
    RunMetricsSerializer,
    RunProgressSerializer,
    RunRerunSerializer,
    RunRetriedSerializer,
    RunRetrySerializer,
    RunSerializer,
    TrialSerializer,
)
from veriharm_site.api_errors import API_ERRORS, Refusal, refusal
from veriharm_site.api_paging import CheckedPageNumberPagination, paged
from veriharm_site.permissions import api_permission, api_read_or_write_permission, signed_in_user
from veriharm_site.queries import query_of

VIEW = api_permission("evaluation.view_evaluations")
RUN = api_permission("evaluation.run_evaluations")
# Endpoints whose GET reads and POST writes.
VIEW_OR_RUN = api_read_or_write_permission("evaluation.view_evaluations", "evaluation.run_evaluations")
ERRORS = API_ERRORS


def _run(pk: int) -> Run:
    run = run_selectors.run_found(pk)
    if run is None:
        raise NotFound("no such run")
    return run


class RunListApi(APIView):
    """Runs, newest first (GET); launch a run (POST, admins)."""

    permission_classes = [VIEW_OR_RUN]
    pagination_class = CheckedPageNumberPagination

    @extend_schema(responses=RunSerializer(many=True))
    def get(self, request: Request) -> Response:
        def rows(page: list[Run]) -> Any:
            return RunSerializer(page, many=True, context={"model_usage": model_usage.runs_model_usage(page)}).data

        return paged(request, self, run_selectors.runs_list(), rows)

    @extend_schema(request=LaunchSerializer, responses={201: RunSerializer, 400: ERRORS})
    def post(self, request: Request) -> Response:
        payload = LaunchSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        agent_ids, unknown = run_selectors.agent_ids_named(data["agents"])
        if unknown:
            return refusal(f"no agent {', '.join(unknown)}", field="agents")
        run = run_launch(
            selection=data["selection"],
            agent_ids=agent_ids,
            repetitions=data.get("repetitions"),
            backend=data.get("backend") or None,
            created_by=signed_in_user(request),
            name=data["name"],
            test_timeout=data.get("test_timeout"),
            protocol=data.get("protocol"),
            budget_usd=data.get("budget_usd"),
        )
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    permission_classes = [VIEW]

    @extend_schema(responses=RunSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(RunSerializer(_run(pk)).data)


class RunProgressApi(APIView):
    permission_classes = [VIEW]

    @extend_schema(responses=RunProgressSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(run_selectors.run_progress(_run(pk)))


class RunCancelApi(APIView):
    permission_classes = [RUN]

    @extend_schema(request=None, responses=RunProgressSerializer)
    def post(self, request: Request, pk: int) -> Response:
        run = _run(pk)
        run_cancel(run)
        return Response(run_selectors.run_progress(run))


class RunRerunApi(APIView):
    permission_classes = [RUN]

    @extend_schema(request=RunRerunSerializer, responses={201: RunSerializer, 400: ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        run = _run(pk)
        payload = RunRerunSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        new = run_rerun(run, created_by=signed_in_user(request), backend=payload.validated_data.get("backend") or None)
        return Response(RunSerializer(new).data, status=status.HTTP_201_CREATED)


class RunRetryApi(APIView):
    """Retry the run's trials that ended without a verdict, by ending, as new trials of the same run."""

    permission_classes = [RUN]

    @extend_schema(request=RunRetrySerializer, responses={201: RunRetriedSerializer, 400: ERRORS, 409: ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        run = _run(pk)
        payload = RunRetrySerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        retried = run_retry_unscored(run, payload.validated_data["ends"])
        body = {"run": run.pk, "retried": retried.by_end, "trials": retried.trial_ids}
        return Response(RunRetriedSerializer(body).data, status=status.HTTP_201_CREATED)


class RunMetricsApi(APIView):
    """Table 2 per agent of the run, with breakdowns by perturbation and risk category."""

    permission_classes = [VIEW]

    @extend_schema(responses=RunMetricsSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(exports.metrics_document(_run(pk)))


class RunTrajectoriesApi(APIView):
    """The run's current trials as ATIF trajectories (a .tar.gz of `<trial>/trajectory.json` and a
    manifest) or as an Inspect eval log (.eval; one agent's run): docs/interop.md."""

    permission_classes = [VIEW]
    export = ""

    @extend_schema(
        responses={(200, "application/gzip"): OpenApiTypes.BINARY, (200, "application/zip"): OpenApiTypes.BINARY}
    )
    def get(self, request: Request, pk: int) -> HttpResponse:
        chosen = exports.TRAJECTORY_EXPORTS[self.export]
        run = _run(pk)
        response = HttpResponse(chosen.document(run), content_type=chosen.content_type)
        response["Content-Disposition"] = f'attachment; filename="{chosen.file_name(run)}"'
        return response


class RunCompareApi(APIView):
    """Two agents of the run paired by candidate: the differences in TA, HSR and SSR with a paired
    bootstrap interval, and McNemar's exact test when every candidate ran once per system."""

    permission_classes = [VIEW]

    @extend_schema(parameters=[PairedComparisonApiQuery], responses={200: PairedComparisonSerializer, 400: ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        run = _run(pk)
        query = query_of(PairedComparisonApiQuery, request.query_params)
        other = None
        if query["run_b"] is not None:
            other = run_selectors.run_found(query["run_b"])
            if other is None:
                raise Refusal(f"no run {query['run_b']}", field="run_b")
        document = exports.paired_document(metric_selectors.paired_comparison(run, query["a"], query["b"], run_b=other))
        return Response(PairedComparisonSerializer(document).data)


class RunTrialsApi(APIView):
    permission_classes = [VIEW]
    pagination_class = CheckedPageNumberPagination

    @extend_schema(parameters=[RunTrialsQuery], responses=TrialSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        run = _run(pk)
        query = query_of(RunTrialsQuery, request.query_params)
        trials = run_selectors.run_trials(run, query["status"], query["q"])
        return paged(request, self, trials, lambda page: TrialSerializer(page, many=True).data)


class AgentListApi(APIView):
    permission_classes = [VIEW]
    pagination_class = CheckedPageNumberPagination

    @extend_schema(responses=AgentSerializer(many=True))
    def get(self, request: Request) -> Response:
        return paged(request, self, run_selectors.agents_listed(), lambda page: AgentSerializer(page, many=True).data)
