"""API of curation: decisions, revisions, the review queue, releases and the reports.

Reading needs `candidates.view_ranking`, writing `candidates.curate`. A frozen release
answers every attempt to change it with 409 Conflict and a message, and stays unchanged.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import API_ERRORS, refusal
from veriharm_site.api_paging import CheckedPageNumberPagination, paged
from veriharm_site.permissions import api_permission, signed_in_user
from veriharm_site.queries import query_of

from ..harm_test_verdicts import reference_states_for
from ..models import Candidate, Decision, Perturbation, Release, Revision
from ..queries import ReviewQueueQuery
from ..releases import services as releases
from ..releases.bundle import release_bundle
from ..releases.bundle_import import release_bundle_import
from ..releases.interop.exports import HARNESS_EXPORTS
from . import review, revisions
from .descriptive import breakdown
from .queue_listing import review_queue_listing
from .search_report import search_report
from .selectors import descriptive_cells, search_funnel, search_rows
from .serializers import (
    BulkDecisionRequestSerializer,
    BulkDecisionResultSerializer,
    BundleImportRequestSerializer,
    DecisionRequestSerializer,
    DecisionSerializer,
    DescriptiveSerializer,
    ReleaseCreateSerializer,
    ReleaseDetailSerializer,
    ReleaseFreezeRequestSerializer,
    ReleaseSerializer,
    ReleaseUpdateSerializer,
    ReviewQueueSerializer,
    RevisionRequestSerializer,
    RevisionSerializer,
    SearchReportSerializer,
)

READ = "candidates.view_ranking"
CURATE = "candidates.curate"
CANDIDATE_PARAMETER = OpenApiParameter("candidate", str, description="A candidate's id", required=True)


class _ReadOrCurate(APIView):
    """Safe methods need the read permission, the others the curate permission."""

    def get_permissions(self) -> list[BasePermission]:
        perm = READ if self.request.method in SAFE_METHODS else CURATE
        return [api_permission(perm)()]


def _conflict(message: str) -> Response:
    return refusal(message, code=status.HTTP_409_CONFLICT)


def _candidate(external_id: str) -> Candidate | None:
    return Candidate.objects.filter(external_id=external_id).only("pk", "external_id", "revision").first()


def _not_found(what: str, field: str = "") -> Response:
    return refusal(f"No {what}.", field=field, code=status.HTTP_404_NOT_FOUND)


class _CandidateHistoryApi(_ReadOrCurate):
    """GET ?candidate=<id> lists a candidate's history rows; POST adds one through a service.
    A refusal because the candidate moved on (another revision) is a 409, any other a 400."""

    request_serializer: type[serializers.Serializer]
    row_serializer: type[serializers.Serializer]

    def rows(self, candidate: Candidate) -> list[Any]:
        raise NotImplementedError

    def add(self, candidate: Candidate, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    def get(self, request: Request) -> Response:
        candidate = _candidate(request.query_params.get("candidate", ""))
        if candidate is None:
            return _not_found("candidate with this id", "candidate")
        return Response(self.row_serializer(self.rows(candidate), many=True).data)

    def post(self, request: Request) -> Response:
        payload = self.request_serializer(data=request.data)
        payload.is_valid(raise_exception=True)
        candidate = _candidate(payload.validated_data["candidate"])
        if candidate is None:
            return _not_found("candidate with this id", "candidate")
        row = self.add(candidate, payload.validated_data)
        return Response(self.row_serializer(row).data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(parameters=[CANDIDATE_PARAMETER], responses=DecisionSerializer(many=True)),
    post=extend_schema(request=DecisionRequestSerializer, responses={201: DecisionSerializer}),
)
class DecisionListApi(_CandidateHistoryApi):
    """A candidate's decisions, latest first (the first is the current one); POST records a new one."""

    request_serializer = DecisionRequestSerializer
    row_serializer = DecisionSerializer

    def rows(self, candidate: Candidate) -> list[Decision]:
        return review.decision_history(candidate.pk)

    def add(self, candidate: Candidate, data: dict[str, Any]) -> Decision:
        return review.decision_record(
            candidate_id=candidate.pk,
            user=signed_in_user(self.request),
            verdict=data["verdict"],
            reason=data["reason"],
            note=data["note"],
            seen_revision=data.get("revision"),
            acknowledge_flags=data["acknowledge_flags"],
            acknowledge_human_verdict=data["acknowledge_human_verdict"],
            acknowledge_synthetic=data["acknowledge_synthetic"],
        )


@extend_schema_view(
    get=extend_schema(parameters=[CANDIDATE_PARAMETER], responses=RevisionSerializer(many=True)),
    post=extend_schema(request=RevisionRequestSerializer, responses={201: RevisionSerializer}),
)
class RevisionListApi(_CandidateHistoryApi):
    """A candidate's stored revisions, oldest first (none until its first edit); POST edits it."""

    request_serializer = RevisionRequestSerializer
    row_serializer = RevisionSerializer

    def rows(self, candidate: Candidate) -> list[Revision]:
        return revisions.candidate_revisions(candidate.pk)

    def add(self, candidate: Candidate, data: dict[str, Any]) -> Revision:
        return revisions.candidate_revise(
            candidate_id=candidate.pk,
            user=signed_in_user(self.request),
            instruction=data["instruction"],
            harm_test=data["harm_test"],
            reason=data["reason"],
            base_revision=data["base_revision"],
        )


class ReviewQueueApi(APIView):
    """The top-K with each one's current verdict ("" while undecided) and flags (why its tests failed
    their reference check, in words; [] when not flagged), sorted, filtered and searched as the queue
    page is. The counts are of the whole top-K."""

    permission_classes = [api_permission(CURATE)]

    @extend_schema(parameters=[ReviewQueueQuery], responses=ReviewQueueSerializer)
    def get(self, request: Request) -> Response:
        query = query_of(ReviewQueueQuery, request.query_params)
        queue = review.review_queue(query["k"])
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


class ReleaseListApi(_ReadOrCurate):
    """Releases by name, newest first, a page at a time (GET); a new draft (POST)."""

    pagination_class = CheckedPageNumberPagination

    @extend_schema(responses=ReleaseSerializer(many=True))
    def get(self, request: Request) -> Response:
        return paged(request, self, releases.release_list(), lambda page: ReleaseSerializer(page, many=True).data)

    @extend_schema(request=ReleaseCreateSerializer, responses={201: ReleaseSerializer})
    def post(self, request: Request) -> Response:
        payload = ReleaseCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        release = releases.release_create(user=signed_in_user(request), **payload.validated_data)
        return Response(ReleaseSerializer(release).data, status=status.HTTP_201_CREATED)


def _release(pk: int) -> Release | None:
    try:
        return releases.release_get(pk)
    except Release.DoesNotExist:
        return None


class ReleaseDetailApi(_ReadOrCurate):
    """A release with its items; a draft's description may change and a draft may be deleted."""

    @extend_schema(responses=ReleaseDetailSerializer, operation_id="releases_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        release = _release(pk)
        if release is None:
            return _not_found("release", "id")
        return Response(ReleaseDetailSerializer(release).data)

    @extend_schema(request=ReleaseUpdateSerializer, responses=ReleaseSerializer)
    def patch(self, request: Request, pk: int) -> Response:
        if _release(pk) is None:
            return _not_found("release", "id")
        payload = ReleaseUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        release = releases.release_update(pk, description=payload.validated_data["description"])
        return Response(ReleaseSerializer(release).data)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, pk: int) -> Response:
        if _release(pk) is None:
            return _not_found("release", "id")
        releases.release_delete(pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReleaseFreezeApi(APIView):
    """Freeze a draft with the approved set as it is now."""

    permission_classes = [api_permission(CURATE)]

    @extend_schema(request=ReleaseFreezeRequestSerializer, responses={200: ReleaseDetailSerializer, 400: API_ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        if _release(pk) is None:
            return _not_found("release", "id")
        payload = ReleaseFreezeRequestSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        release = releases.release_freeze(
            pk,
            user=signed_in_user(request),
            acknowledge_human_verdict=payload.validated_data["acknowledge_human_verdict"],
            acknowledge_synthetic=payload.validated_data["acknowledge_synthetic"],
        )
        return Response(ReleaseDetailSerializer(release).data)


class _FrozenExport(APIView):
    permission_classes = [api_permission(READ)]

    def frozen(self, pk: int) -> Release | Response:
        release = _release(pk)
        if release is None:
            return _not_found("release", "id")
        if not release.is_frozen:
            return _conflict(f"{release.label} is a draft: freeze it to export it.")
        return release


class ReleaseJsonlApi(_FrozenExport):
    """The release in the pipeline format: the bytes its checksum covers."""

    @extend_schema(responses={(200, "application/x-ndjson"): OpenApiTypes.STR}, operation_id="releases_export_jsonl")
    def get(self, request: Request, pk: int) -> StreamingHttpResponse | Response:
        release = self.frozen(pk)
        if isinstance(release, Response):
            return release
        response = StreamingHttpResponse(releases.release_jsonl_lines(release), content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{release.name}-{release.version}.jsonl"'
        return response


class ReleaseBundleApi(_FrozenExport):
    """The runnable bundle (.tar.gz): per instance the task, both tests and the environment."""

    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY}, operation_id="releases_bundle")
    def get(self, request: Request, pk: int) -> HttpResponse | Response:
        release = self.frozen(pk)
        if isinstance(release, Response):
            return release
        name, data = release_bundle(release)
        response = HttpResponse(data, content_type="application/gzip")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class ReleaseHarnessExportApi(_FrozenExport):
    """The release as another harness runs it: an Inspect AI task (or a Harbor dataset), .tar.gz."""

    harness = ""

    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY})
    def get(self, request: Request, pk: int) -> HttpResponse | Response:
        release = self.frozen(pk)
        if isinstance(release, Response):
            return release
        name, data = HARNESS_EXPORTS[self.harness].archive(release)
        response = HttpResponse(data, content_type="application/gzip")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


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
