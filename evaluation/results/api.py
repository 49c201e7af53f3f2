"""The API of a trial and of a candidate's results: one view per endpoint, each reading through a
selector or writing through a service, its output serializer building the response."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from candidates.models import Candidate
from candidates.pool.selectors import candidate_found
from evaluation.results import selectors, trial_selectors
from evaluation.results.serializers import (
    CandidateRerunSerializer,
    CandidateResultsSerializer,
    RescoreSerializer,
    TrialDetailSerializer,
)
from evaluation.runs import selectors as run_selectors
from evaluation.runs.launch import candidate_rerun
from evaluation.runs.serializers import RunSerializer
from evaluation.trials import rescoring
from veriharm_site.api_errors import API_ERRORS, refusal
from veriharm_site.permissions import api_permission, api_read_or_write_permission, signed_in_user

VIEW = api_permission("evaluation.view_evaluations")
RUN = api_permission("evaluation.run_evaluations")
# Endpoints whose GET reads and POST writes.
VIEW_OR_RUN = api_read_or_write_permission("evaluation.view_evaluations", "evaluation.run_evaluations")
ERRORS = API_ERRORS


def _candidate(external_id: str) -> Candidate:
    candidate = candidate_found(external_id)
    if candidate is None:
        raise NotFound("no such candidate")
    return candidate


class TrialDetailApi(APIView):
    """One trial with exactly what it ran (each input with its sha256), its end and its transcript."""

    permission_classes = [VIEW]

    @extend_schema(responses=TrialDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        trial = trial_selectors.trial_found(pk)
        if trial is None:
            raise NotFound("no such trial")
        return Response(TrialDetailSerializer(trial).data)


class CandidateResultsApi(APIView):
    """A candidate's latest result per agent, its reference check, and its trial history."""

    permission_classes = [VIEW]

    @extend_schema(responses=CandidateResultsSerializer)
    def get(self, request: Request, external_id: str) -> Response:
        candidate = _candidate(external_id)
        results = {
            "candidate": candidate.external_id,
            "revision": candidate.revision,
            "latest": selectors.latest_results_for_candidates([candidate.pk])[candidate.pk],
            "reference_check": selectors.reference_check_for(candidate.pk),
            "history": selectors.candidate_trial_history(candidate.pk),
        }
        return Response(CandidateResultsSerializer(results).data)


class CandidateRerunApi(APIView):
    permission_classes = [RUN]

    @extend_schema(request=CandidateRerunSerializer, responses={201: RunSerializer, 400: ERRORS})
    def post(self, request: Request, external_id: str) -> Response:
        candidate = _candidate(external_id)
        payload = CandidateRerunSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        agent_ids = None
        if data.get("agents"):
            agent_ids, unknown = run_selectors.agent_ids_named(data["agents"])
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


class CandidateRescoresApi(APIView):
    """A candidate's re-scores beside each trial's own verdict (GET); re-score its earlier trials
    against the current revision's tests from their kept final states, no agent run (POST, admins)."""

    permission_classes = [VIEW_OR_RUN]

    @extend_schema(responses=RescoreSerializer(many=True))
    def get(self, request: Request, external_id: str) -> Response:
        rows = rescoring.candidate_rescores(_candidate(external_id).pk)
        return Response(RescoreSerializer([row.rescore for row in rows], many=True).data)

    @extend_schema(request=None, responses={202: RescoreSerializer(many=True), 400: ERRORS})
    def post(self, request: Request, external_id: str) -> Response:
        rescores = rescoring.rescore_launch(_candidate(external_id), requested_by=signed_in_user(request))
        return Response(RescoreSerializer(rescores, many=True).data, status=status.HTTP_202_ACCEPTED)
