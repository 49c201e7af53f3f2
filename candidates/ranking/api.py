"""API of the candidate pool: the ranking, one candidate, the export in the pipeline format and the
format's JSON Schema (the import and its jobs have theirs in `candidates.import_jobs.api`). One APIView per
endpoint; the serializers beside them in serializers.py."""

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.generics import get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_paging import CheckedPageNumberPagination, paged
from veriharm_site.permissions import api_any_permission, api_permission
from veriharm_site.queries import query_of

from ..hooks.flags import candidate_flags
from ..hooks.harm_test_verdicts import reference_states_for
from ..models import Candidate
from ..pipeline.schema import pipeline_schema
from ..pool import selectors as pool
from ..pool.selectors import RankingBounds
from . import selectors
from .queries import RankingQuery
from .serializers import (
    CandidateDetailSerializer,
    CandidateListSerializer,
)


def _row_context(request: Request, bounds: RankingBounds, rows: list[Candidate]) -> dict[str, Any]:
    """What the candidate serializers read beside the rows: the K groups, judge sums, flags and
    reference states, each read once for the rows shown."""
    return {
        "request": request,
        "bounds": bounds,
        "sums": selectors.candidate_judge_sums([c.pk for c in rows]),
        "flags": candidate_flags(c.pk for c in rows),
        "references": reference_states_for(request.user, [c.pk for c in rows]),
    }


class CandidateListApi(APIView):
    """The ranking: Q descending, ties by id (or in `sort`'s order); each row says whether it is in the
    top-K or bottom-K."""

    permission_classes = [api_permission("candidates.view_ranking")]
    pagination_class = CheckedPageNumberPagination

    @extend_schema(
        parameters=[RankingQuery], responses=CandidateListSerializer(many=True), operation_id="candidates_list"
    )
    def get(self, request: Request) -> Response:
        query = query_of(RankingQuery, request.query_params)
        bounds = pool.ranking_bounds(query["k"])
        # The page's own reading: a rank range where the selection is contiguous in rank, so the
        # last page of 100,000 candidates reads its 50 rows instead of skipping 99,950 (OFFSET).
        rows = selectors.ranking_rows(query, bounds)
        return paged(
            request,
            self,
            rows,
            lambda page: CandidateListSerializer(page, many=True, context=_row_context(request, bounds, page)).data,
        )


class CandidateDetailApi(APIView):
    permission_classes = [api_permission("candidates.view_ranking")]

    @extend_schema(responses=CandidateDetailSerializer, operation_id="candidates_retrieve")
    def get(self, request: Request, external_id: str) -> Response:
        candidate = get_object_or_404(
            Candidate.objects.select_related("source_task").prefetch_related(pool.judgements_prefetch()),
            external_id=external_id,
        )
        context = {
            "request": request,
            "bounds": pool.ranking_bounds(),
            # The judgements are prefetched: their sums need no query.
            "sums": {candidate.pk: [(j.judge, j.total) for j in candidate.judgements.all()]},
            "flags": candidate_flags([candidate.pk]),
            "references": reference_states_for(request.user, [candidate.pk]),
        }
        return Response(CandidateDetailSerializer(candidate, context=context).data)


class ExportApi(APIView):
    permission_classes = [api_permission("candidates.import_pipeline")]

    @extend_schema(responses={(200, "application/x-ndjson"): OpenApiTypes.STR})
    def get(self, request: Request) -> StreamingHttpResponse:
        response = StreamingHttpResponse(pool.pipeline_export_lines(), content_type="application/x-ndjson")
        response["Content-Disposition"] = 'attachment; filename="veriharm-candidates.jsonl"'
        return response


class PipelineFormatSchemaApi(APIView):
    """The pipeline format's JSON Schema (draft 2020-12), generated from the models the import validates with:
    one line of a pipeline file, either kind. Rules beyond the schema are in its description."""

    permission_classes = [api_any_permission("candidates.import_pipeline", "candidates.view_ranking")]

    @extend_schema(
        responses={(200, "application/schema+json"): OpenApiTypes.OBJECT}, operation_id="pipeline_format_schema"
    )
    def get(self, request: Request) -> Response:
        return Response(pipeline_schema(), content_type="application/schema+json")
