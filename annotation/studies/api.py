"""API of studies and their results, for curators and viewers: studies (list, create, one, close,
reopen), each study's items beside the harm tests, its results and its export."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import refusal
from veriharm_site.api_paging import CheckedPageNumberPagination, paged
from veriharm_site.permissions import api_permission, api_read_or_write_permission, signed_in_user
from veriharm_site.queries import query_of

from ..models import Study
from . import exports, services
from .item_table import item_table
from .queries import ExportQuery, ItemsQuery
from .sampling import random_seed
from .selectors import results as tables
from .selectors.users import annotator_users
from .serializers import (
    ItemRowSerializer,
    StudyCreateSerializer,
    StudyDetailSerializer,
    StudyExportSerializer,
    StudyResultsSerializer,
    StudySerializer,
)

Curators = api_permission("annotation.manage_studies")
ResultReaders = api_permission("annotation.view_results")


def _study(pk: int) -> Study:
    try:
        return tables.study_for_curators(pk)
    except Study.DoesNotExist:
        raise Http404 from None


def _detail(study: Study, request: Request) -> dict:
    study.strata = tables.strata_rows(study)
    study.member_rows = tables.member_rows(study, usernames=request.user.has_perm("annotation.manage_studies"))
    return StudyDetailSerializer(study).data


class StudiesApi(APIView):
    """Studies, newest first, a page at a time (GET); a new study (POST)."""

    permission_classes = [api_read_or_write_permission("annotation.view_results", "annotation.manage_studies")]
    pagination_class = CheckedPageNumberPagination

    @extend_schema(responses=StudySerializer(many=True))
    def get(self, request: Request) -> Response:
        return paged(request, self, tables.study_summaries(), lambda page: StudySerializer(page, many=True).data)

    @extend_schema(request=StudyCreateSerializer, responses={201: StudyDetailSerializer})
    def post(self, request: Request) -> Response:
        payload = StudyCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = dict(payload.validated_data)
        names = data.pop("annotators", None)
        if "filter" in data:
            data["ranking_filter"] = data.pop("filter")
        if "candidates" in data:
            data["candidate_ids"] = data.pop("candidates")
        if names is None:
            users = list(annotator_users())
        else:
            users = list(get_user_model().objects.filter(username__in=names))
            unknown = sorted(set(names) - {u.get_username() for u in users})
            if unknown:
                return refusal(f"unknown users: {', '.join(unknown)}", field="annotators")
        data.setdefault("seed", random_seed())
        data.setdefault("top_k", settings.VERIHARM_TOP_K)
        study = services.study_create(services.StudySpec(**data), annotators=users, created_by=signed_in_user(request))
        return Response(_detail(study, request), status=status.HTTP_201_CREATED)


class StudyApi(APIView):
    permission_classes = [ResultReaders]

    @extend_schema(responses=StudyDetailSerializer)
    def get(self, request: Request, pk: int) -> Response:
        return Response(_detail(_study(pk), request))


class StudyStatusApi(APIView):
    permission_classes = [Curators]
    action = "close"

    @extend_schema(request=None, responses=StudySerializer)
    def post(self, request: Request, pk: int) -> Response:
        study = _study(pk)
        study = services.study_close(study) if self.action == "close" else services.study_reopen(study)
        return Response(StudySerializer(study).data)


class StudyItemsApi(APIView):
    """Every item with its labels (annotators pseudonymised), per-criterion majorities and Valid_agg;
    sorted, filtered and searched as the results page's table is."""

    permission_classes = [ResultReaders]

    @extend_schema(parameters=[ItemsQuery], responses=ItemRowSerializer(many=True))
    def get(self, request: Request, pk: int) -> Response:
        query = query_of(ItemsQuery, request.query_params)
        items = tables.items_beside_tests(
            tables.study_item_rows(_study(pk)), signed_in_user(request), disagree_only=query["disagree"]
        )
        rows = item_table(items.rows, query)
        return Response(ItemRowSerializer(rows, many=True, context={"verdicts": items.verdicts}).data)


class StudyResultsApi(APIView):
    """Agreement on Valid and each criterion, the group as a predictor of Valid_agg (Figure 3), and
    each judge beside the annotators: its Valid against Valid_agg and its sum in place of Q."""

    permission_classes = [ResultReaders]

    @extend_schema(responses=StudyResultsSerializer)
    def get(self, request: Request, pk: int) -> Response:
        results = tables.study_results(_study(pk))
        return Response(exports.results_summary(results) | exports.judges_summary(tables.study_judges(results.rows)))


class StudyExportApi(APIView):
    """Settings, results, items and every label; `identities=1` (admins) adds user names."""

    permission_classes = [ResultReaders]

    @extend_schema(parameters=[ExportQuery], responses=StudyExportSerializer)
    def get(self, request: Request, pk: int) -> Response:
        identities = query_of(ExportQuery, request.query_params)["identities"]
        if identities and not request.user.has_perm("annotation.export_identities"):
            return refusal(
                "Exporting annotators' identities needs annotation.export_identities.",
                field="identities",
                code=status.HTTP_403_FORBIDDEN,
            )
        return Response(exports.study_json(_study(pk), identities=identities))
