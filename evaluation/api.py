from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from candidates.models import Candidate
from evaluation.results import selectors
from evaluation.runs import exports
from evaluation.runs.launch import candidate_rerun, run_cancel, run_launch, run_rerun
from evaluation.runs.retries import run_retry_unscored
from evaluation.trials import rescoring
from veriharm_site.api_errors import API_ERRORS, refusal
from veriharm_site.permissions import api_permission, signed_in_user
from veriharm_site.queries import query_of

from .models import Agent, Run, Trial
from .queries import PairedComparisonApiQuery, RunTrialsQuery
from .serializers import (
    AgentSerializer,
    CandidateRerunSerializer,
    LatestResultSerializer,
    LaunchSerializer,
    PairedComparisonSerializer,
    ReferenceCheckSerializer,
    RescoreSerializer,
    RunMetricsSerializer,
    RunProgressSerializer,
    RunRerunSerializer,
    RunRetriedSerializer,
    RunRetrySerializer,
    RunSerializer,
    TrialDetailSerializer,
    TrialSerializer,
)

VIEW = api_permission("evaluation.view_evaluations")
RUN = api_permission("evaluation.run_evaluations")
ERRORS = API_ERRORS


def _agent_ids(names_or_ids: list[str]) -> tuple[list[int], list[str]]:
    ids, unknown = [], []
    for value in names_or_ids:
        # isdecimal() alone accepts other scripts' digits ("٣") and isdigit() superscripts ("²"),
        # which int() or the database refuse: an id is ASCII digits.
        is_id = value.isascii() and value.isdecimal()
        agent = Agent.objects.filter(pk=int(value)).first() if is_id else None
        agent = agent or Agent.objects.filter(name=value).first()
        if agent is None:
            unknown.append(value)
        else:
            ids.append(agent.pk)
    return ids, unknown


class RunListApi(generics.ListAPIView):
    """Runs, newest first (GET); launch a run (POST, admins)."""

    serializer_class = RunSerializer
    queryset = Run.objects.select_related("created_by", "release").prefetch_related("agents")

    def get_permissions(self):
        return [RUN()] if self.request.method == "POST" else [VIEW()]

    def get_serializer(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("many") and args:
            page = list(args[0])
            context = kwargs.setdefault("context", self.get_serializer_context())
            context["model_usage"] = selectors.runs_model_usage(page)
            args = (page, *args[1:])
        return super().get_serializer(*args, **kwargs)

    @extend_schema(request=LaunchSerializer, responses={201: RunSerializer, 400: ERRORS})
    def post(self, request: Request) -> Response:
        payload = LaunchSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        agent_ids, unknown = _agent_ids(data["agents"])
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


class RunDetailApi(generics.RetrieveAPIView):
    permission_classes = [VIEW]
    serializer_class = RunSerializer
    queryset = Run.objects.select_related("created_by").prefetch_related("agents")


class RunProgressApi(APIView):
    permission_classes = [VIEW]

    @extend_schema(responses=RunProgressSerializer)
    def get(self, request: Request, pk: int) -> Response:
        run = generics.get_object_or_404(Run, pk=pk)
        return Response(selectors.run_progress(run))


class RunCancelApi(APIView):
    permission_classes = [RUN]

    @extend_schema(request=None, responses=RunProgressSerializer)
    def post(self, request: Request, pk: int) -> Response:
        run = generics.get_object_or_404(Run, pk=pk)
        run_cancel(run)
        return Response(selectors.run_progress(run))


class RunRerunApi(APIView):
    permission_classes = [RUN]

    @extend_schema(request=RunRerunSerializer, responses={201: RunSerializer, 400: ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        run = generics.get_object_or_404(Run, pk=pk)
        payload = RunRerunSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        new = run_rerun(run, created_by=signed_in_user(request), backend=payload.validated_data.get("backend") or None)
        return Response(RunSerializer(new).data, status=status.HTTP_201_CREATED)


class RunRetryApi(APIView):
    """Retry the run's trials that ended without a verdict, by ending, as new trials of the same run."""

    permission_classes = [RUN]

    @extend_schema(request=RunRetrySerializer, responses={201: RunRetriedSerializer, 400: ERRORS, 409: ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        run = generics.get_object_or_404(Run, pk=pk)
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
        return Response(exports.metrics_document(generics.get_object_or_404(Run, pk=pk)))


class RunCompareApi(APIView):
    """Two agents of the run paired by candidate: the differences in TA, HSR and SSR with a paired
    bootstrap interval, and McNemar's exact test when every candidate ran once per system."""

    permission_classes = [VIEW]

    @extend_schema(parameters=[PairedComparisonApiQuery], responses={200: PairedComparisonSerializer, 400: ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        run = generics.get_object_or_404(Run, pk=pk)
        query = query_of(PairedComparisonApiQuery, request.query_params)
        document = exports.paired_document(selectors.paired_comparison(run, query["a"], query["b"]))
        return Response(PairedComparisonSerializer(document).data)


class RunTrialsApi(generics.ListAPIView):
    permission_classes = [VIEW]
    serializer_class = TrialSerializer

    @extend_schema(parameters=[RunTrialsQuery])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        run = generics.get_object_or_404(Run, pk=self.kwargs["pk"])
        query = query_of(RunTrialsQuery, self.request.query_params)
        return selectors.run_trials(run, query["status"], query["q"])


class TrialDetailApi(generics.RetrieveAPIView):
    """One trial with exactly what it ran (each input with its sha256), its end and its transcript."""

    permission_classes = [VIEW]
    serializer_class = TrialDetailSerializer
    queryset = Trial.objects.select_related("candidate", "agent", "inputs", "final_state").prefetch_related(
        "steps", "model_calls"
    )


class AgentListApi(generics.ListAPIView):
    permission_classes = [VIEW]
    serializer_class = AgentSerializer
    queryset = Agent.objects.order_by("name")


class CandidateResultsApi(APIView):
    """A candidate's latest result per agent, its reference check, and its trial history."""

    permission_classes = [VIEW]

    @extend_schema(
        responses=inline_serializer(
            "CandidateResults",
            {
                "candidate": serializers.CharField(),
                "revision": serializers.IntegerField(),
                "latest": LatestResultSerializer(many=True),
                "reference_check": ReferenceCheckSerializer(allow_null=True),
                "history": TrialSerializer(many=True),
            },
        )
    )
    def get(self, request: Request, external_id: str) -> Response:
        candidate = generics.get_object_or_404(Candidate, external_id=external_id)
        check = selectors.reference_check_for(candidate.pk)
        return Response(
            {
                "candidate": candidate.external_id,
                "revision": candidate.revision,
                "latest": LatestResultSerializer(
                    selectors.latest_results_for_candidates([candidate.pk])[candidate.pk], many=True
                ).data,
                "reference_check": ReferenceCheckSerializer(check).data if check else None,
                "history": TrialSerializer(selectors.candidate_trial_history(candidate.pk), many=True).data,
            }
        )


class CandidateRerunApi(APIView):
    permission_classes = [RUN]

    @extend_schema(request=CandidateRerunSerializer, responses={201: RunSerializer, 400: ERRORS})
    def post(self, request: Request, external_id: str) -> Response:
        candidate = generics.get_object_or_404(Candidate, external_id=external_id)
        payload = CandidateRerunSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        agent_ids = None
        if data.get("agents"):
            agent_ids, unknown = _agent_ids(data["agents"])
            if unknown:
                return refusal(f"no agent {', '.join(unknown)}", field="agents")
        run = candidate_rerun(
            candidate,
            created_by=signed_in_user(request),
            agent_ids=agent_ids,
            repetitions=data["repetitions"],
            backend=data.get("backend") or None,
        )
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)


class CandidateRescoresApi(generics.ListAPIView):
    """A candidate's re-scores beside each trial's own verdict (GET); re-score its earlier trials
    against the current revision's tests from their kept final states, no agent run (POST, admins)."""

    serializer_class = RescoreSerializer
    pagination_class = None

    def get_permissions(self):
        return [RUN()] if self.request.method == "POST" else [VIEW()]

    def get_queryset(self):
        candidate = generics.get_object_or_404(Candidate, external_id=self.kwargs["external_id"])
        return [row.rescore for row in rescoring.candidate_rescores(candidate.pk)]

    @extend_schema(request=None, responses={202: RescoreSerializer(many=True), 400: ERRORS})
    def post(self, request: Request, external_id: str) -> Response:
        candidate = generics.get_object_or_404(Candidate, external_id=external_id)
        rescores = rescoring.rescore_launch(candidate, requested_by=signed_in_user(request))
        return Response(RescoreSerializer(rescores, many=True).data, status=status.HTTP_202_ACCEPTED)
