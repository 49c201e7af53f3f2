"""API of curation: decisions, revisions, the review queue and the reports (releases have theirs in
`candidates.releases.api`).

Reading needs `candidates.view_ranking`, writing `candidates.curate`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import API_ERRORS, Refusal
from veriharm_site.permissions import api_permission, api_read_or_write_permission, signed_in_user
from veriharm_site.queries import query_of

from ..hooks.harm_test_verdicts import reference_states_for
from ..models import Candidate, Perturbation
from . import review, revisions, selectors
from .descriptive import breakdown
from .queries import ReviewQueueQuery
from .queue_listing import review_queue_listing
from .search_report import search_report
from .selectors import descriptive_cells, search_funnel, search_rows
from .serializers import (
    BulkDecisionRequestSerializer,
    BulkDecisionResultSerializer,
    DecisionRequestSerializer,
    DecisionSerializer,
    DescriptiveSerializer,
    ReviewQueueSerializer,
    RevisionRequestSerializer,
    RevisionSerializer,
    SearchReportSerializer,
)

READ = "candidates.view_ranking"
CURATE = "candidates.curate"
CANDIDATE_PARAMETER = OpenApiParameter("candidate", str, description="A candidate's id", required=True)


def _candidate(external_id: str) -> Candidate:
    """The candidate whose decisions or revisions are listed or added to; refused (404, on
    `candidate`) when no candidate has this id."""
    candidate = selectors.candidate_to_curate(external_id)
    if candidate is None:
        raise Refusal("No candidate with this id.", field="candidate", code=status.HTTP_404_NOT_FOUND)
    return candidate


@extend_schema_view(
    get=extend_schema(parameters=[CANDIDATE_PARAMETER], responses=DecisionSerializer(many=True)),
    post=extend_schema(request=DecisionRequestSerializer, responses={201: DecisionSerializer}),
)
class DecisionListApi(APIView):
    """A candidate's decisions, latest first (the first is the current one); POST records a new one."""

    # A refusal because the candidate moved on (another revision) is a 409, any other a 400.

    permission_classes = [api_read_or_write_permission(READ, CURATE)]

    def get(self, request: Request) -> Response:
        candidate = _candidate(request.query_params.get("candidate", ""))
        return Response(DecisionSerializer(selectors.decision_history(candidate.pk), many=True).data)

    def post(self, request: Request) -> Response:
        payload = DecisionRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        decision = review.decision_record(
            candidate_id=_candidate(data["candidate"]).pk,
            user=signed_in_user(request),
            verdict=data["verdict"],
            reason=data["reason"],
            note=data["note"],
            seen_revision=data.get("revision"),
            acknowledge_flags=data["acknowledge_flags"],
            acknowledge_human_verdict=data["acknowledge_human_verdict"],
            acknowledge_synthetic=data["acknowledge_synthetic"],
        )
        return Response(DecisionSerializer(decision).data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(parameters=[CANDIDATE_PARAMETER], responses=RevisionSerializer(many=True)),
    post=extend_schema(request=RevisionRequestSerializer, responses={201: RevisionSerializer}),
)
class RevisionListApi(APIView):
    """A candidate's stored revisions, oldest first (none until its first edit); POST edits it."""

    # A refusal because the candidate moved on (another revision) is a 409, any other a 400.

    permission_classes = [api_read_or_write_permission(READ, CURATE)]

    def get(self, request: Request) -> Response:
        candidate = _candidate(request.query_params.get("candidate", ""))
        return Response(RevisionSerializer(selectors.candidate_revisions(candidate.pk), many=True).data)

    def post(self, request: Request) -> Response:
        payload = RevisionRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        revision = revisions.candidate_revise(
            candidate_id=_candidate(data["candidate"]).pk,
            user=signed_in_user(request),
            instruction=data["instruction"],
            harm_test=data["harm_test"],
            reason=data["reason"],
            base_revision=data["base_revision"],
        )
        return Response(RevisionSerializer(revision).data, status=status.HTTP_201_CREATED)


class ReviewQueueApi(APIView):
    """The top-K with each one's current verdict ("" while undecided) and flags (why its tests failed
    their reference check, in words; [] when not flagged), sorted, filtered and searched as the queue
    page is. The counts are of the whole top-K."""

    permission_classes = [api_permission(CURATE)]

    @extend_schema(parameters=[ReviewQueueQuery], responses=ReviewQueueSerializer)
    def get(self, request: Request) -> Response:
        query = query_of(ReviewQueueQuery, request.query_params)
        queue = selectors.review_queue(query["k"])
        listing = review_queue_listing(query, queue)
        references = reference_states_for(request.user, [row.pk for row in listing.rows])
        return Response(
            {
                "k": queue.k,
                "total": queue.total,
                "shown": len(listing.rows),
                "decided": queue.decided,
                "approved": queue.approved,
                "rejected": queue.rejected,
                "flagged": queue.flagged,
                "entries": [
                    {
                        "rank": row.rank,
                        "id": row.external_id,
                        "quality": row.quality,
                        "source_task": row.source_task,
                        "perturbation": row.perturbation,
                        "risk_category": row.risk_category,
                        "verdict": row.verdict,
                        "reason": row.reason,
                        "decided_at": row.decided_at,
                        "flags": list(row.flags),
                        "reference_check": None if references is None else str(references[row.pk]),
                    }
                    for row in listing.rows
                ],
            }
        )


class ReviewDecisionsBulkApi(APIView):
    """The same decision for many candidates at once, all or nothing. Unknown ids are refused (404),
    and so is an approval of flagged candidates without acknowledge_flags, or of candidates humans
    judged invalid without acknowledge_human_verdict (400, naming them)."""

    permission_classes = [api_permission(CURATE)]

    @extend_schema(
        request=BulkDecisionRequestSerializer,
        responses={201: BulkDecisionResultSerializer, 400: API_ERRORS, 404: API_ERRORS, 409: API_ERRORS},
    )
    def post(self, request: Request) -> Response:
        payload = BulkDecisionRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        decisions = review.decisions_record_bulk(
            external_ids=data["candidates"],
            user=signed_in_user(request),
            verdict=data["verdict"],
            reason=data["reason"],
            note=data["note"],
            acknowledge_flags=data["acknowledge_flags"],
            acknowledge_human_verdict=data["acknowledge_human_verdict"],
            acknowledge_synthetic=data["acknowledge_synthetic"],
            seen_revisions=data.get("seen_revisions"),
        )
        body = {"recorded": len(decisions), "decisions": DecisionSerializer(decisions, many=True).data}
        return Response(body, status=status.HTTP_201_CREATED)


def _report_row(row: Any) -> dict[str, Any]:
    return {
        "proposer": row.proposer or None,
        "target_agent": row.target_agent or None,
        "searches": row.searches,
        "successes": row.successes,
        "success_rate": row.success_rate,
        "mean_iteration": row.mean_iteration,
        "iteration_counts": list(row.iteration_counts),
        "iteration_shares": list(row.iteration_shares),
        "iteration_share_cis": [
            None if ci is None else {"low": ci.low, "high": ci.high} for ci in row.iteration_share_cis
        ],
        "revised_share": row.revised_share,
        "success_rate_ci_low": None if row.success_rate_ci is None else row.success_rate_ci.low,
        "success_rate_ci_high": None if row.success_rate_ci is None else row.success_rate_ci.high,
        "revised_share_ci_low": None if row.revised_share_ci is None else row.revised_share_ci.low,
        "revised_share_ci_high": None if row.revised_share_ci is None else row.revised_share_ci.high,
    }


class SearchReportApi(APIView):
    """Table 1: per proposer and target agent (null = overall), and the funnel."""

    permission_classes = [api_permission(READ)]

    @extend_schema(responses=SearchReportSerializer)
    def get(self, request: Request) -> Response:
        report = search_report(search_rows())
        return Response(
            {
                "budget": report.budget,
                "blocks": [
                    {
                        "proposer": b.proposer or None,
                        "rows": [_report_row(r) for r in b.rows],
                        "overall": _report_row(b.overall),
                    }
                    for b in report.blocks
                ],
                "overall": _report_row(report.overall),
                "funnel": [asdict(stage) for stage in search_funnel()],
            }
        )


class DescriptiveApi(APIView):
    """Counts of candidates, approved instances and harmful successes by risk category and perturbation."""

    permission_classes = [api_permission(READ)]

    @extend_schema(responses=DescriptiveSerializer)
    def get(self, request: Request) -> Response:
        table = breakdown(descriptive_cells(), Perturbation.values)

        def row(r: Any) -> dict[str, Any]:
            return {
                "risk_category": r.label,
                "by_perturbation": {p: asdict(c) for p, c in zip(table.perturbations, r.by_perturbation)},
                "total": asdict(r.total),
            }

        return Response(
            {
                "perturbations": list(table.perturbations),
                "rows": [row(r) for r in table.rows],
                "total": row(table.totals),
            }
        )
