"""API: blind endpoints for annotators under annotation/my/, study management for curators."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.api_errors import refusal
from veriharm_site.api_paging import CheckedPageNumberPagination, paged
from veriharm_site.permissions import api_permission, signed_in_user
from veriharm_site.queries import query_of

from . import exports, services
from .item_table import item_table
from .models import Assignment, Study
from .queries import ExportQuery, ItemsQuery, NextItemQuery
from .sampling import random_seed
from .selectors import annotator as blind
from .selectors import results as tables
from .selectors.users import annotator_users
from .serializers import (
    AnnotatorStudySerializer,
    BlindItemSerializer,
    ItemRowSerializer,
    LabelInputSerializer,
    NextItemSerializer,
    OwnLabelRowSerializer,
    ProgressSerializer,
    SavedLabelSerializer,
    SkipInputSerializer,
    SkippedItemSerializer,
    StudyCreateSerializer,
    StudyDetailSerializer,
    StudyExportSerializer,
    StudyResultsSerializer,
    StudySerializer,
)

Annotators = api_permission("annotation.annotate")
Curators = api_permission("annotation.manage_studies")
ResultReaders = api_permission("annotation.view_results")


class _ReadOrManage(APIView):
    """Safe methods need annotation.view_results, the others annotation.manage_studies."""

    def get_permissions(self) -> list[BasePermission]:
        return [(ResultReaders if self.request.method in SAFE_METHODS else Curators)()]


# ---------------------------------------------------------------- annotators


def _own_study(request: Request, study_id: int) -> Study:
    try:
        return blind.annotator_study(study_id, signed_in_user(request))
    except Study.DoesNotExist:
        raise Http404 from None


class MyStudiesApi(APIView):
    """The studies you annotate in, with your progress (done / assigned)."""

    permission_classes = [Annotators]

    @extend_schema(responses=AnnotatorStudySerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(AnnotatorStudySerializer(blind.annotator_studies(signed_in_user(request)), many=True).data)


class NextItemApi(APIView):
    """Claim the next item (or get your open claim back); `item` is null when nothing is left for you."""

    permission_classes = [Annotators]

    @extend_schema(request=None, responses=NextItemSerializer, parameters=[NextItemQuery])
    def post(self, request: Request, study_id: int) -> Response:
        skipped = query_of(NextItemQuery, request.query_params)["skipped"]
        assignment = services.item_claim_next(study_id, signed_in_user(request), skipped=skipped)
        study = assignment.study if assignment else _own_study(request, study_id)
        item = blind.blind_item_for(assignment) if assignment else None
        progress = blind.annotator_progress(study, signed_in_user(request))
        return Response(NextItemSerializer({"item": item, "progress": progress}).data)


class ItemApi(APIView):
    permission_classes = [Annotators]

    @extend_schema(responses=BlindItemSerializer)
    def get(self, request: Request, study_id: int, token: str) -> Response:
        try:
            item = blind.blind_item(study_id, token, signed_in_user(request))
        except Assignment.DoesNotExist:
            raise Http404 from None
        return Response(BlindItemSerializer(item).data)


class LabelApi(APIView):
    """Submit or revise your label of an item while the study is open."""

    permission_classes = [Annotators]

    @extend_schema(request=LabelInputSerializer, responses={200: SavedLabelSerializer})
    def put(self, request: Request, study_id: int, token: str) -> Response:
        payload = LabelInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        saved = services.label_submit(
            study_id, token, signed_in_user(request), services.LabelInput(**payload.validated_data)
        )
        progress = blind.annotator_progress(saved.study, signed_in_user(request))
        return Response(SavedLabelSerializer({"label": saved, "progress": progress}).data)

    post = put


class SkipApi(APIView):
    """Set your claimed item aside (optionally flagged as unclear, with a reason): its place goes back
    to the pool; ask for `next/?skipped=1` to come back to your skipped items. A flagged item goes to
    the curators and leaves your queue: only returning to it by its token brings it back."""

    permission_classes = [Annotators]

    @extend_schema(request=SkipInputSerializer, responses={200: ProgressSerializer})
    def post(self, request: Request, study_id: int, token: str) -> Response:
        payload = SkipInputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        skip = services.item_skip(study_id, token, signed_in_user(request), **payload.validated_data)
        return Response(ProgressSerializer(blind.annotator_progress(skip.study, signed_in_user(request))).data)


class MySkippedApi(APIView):
    """The items you set aside in this study and have not come back to, most recent first; `open`
    says whether a place is still free for you."""

    permission_classes = [Annotators]

    @extend_schema(responses={200: SkippedItemSerializer(many=True)})
    def get(self, request: Request, study_id: int) -> Response:
        study = _own_study(request, study_id)
        return Response(SkippedItemSerializer(blind.annotator_skipped(study, signed_in_user(request)), many=True).data)


class ReturnApi(APIView):
    """Claim one of your skipped items again, to label it; an unlabelled item you hold goes back to
    the pool for it (409 when other annotators took all its places meanwhile)."""

    permission_classes = [Annotators]

    @extend_schema(request=None, responses={200: NextItemSerializer})
    def post(self, request: Request, study_id: int, token: str) -> Response:
        assignment = services.item_return(study_id, token, signed_in_user(request))
        assignment = Assignment.objects.select_related("study", "item").get(pk=assignment.pk)
        progress = blind.annotator_progress(assignment.study, signed_in_user(request))
        return Response(NextItemSerializer({"item": blind.blind_item_for(assignment), "progress": progress}).data)


class MyLabelsApi(APIView):
    permission_classes = [Annotators]

    @extend_schema(responses={200: OwnLabelRowSerializer(many=True)})
    def get(self, request: Request, study_id: int) -> Response:
        study = _own_study(request, study_id)
        return Response(OwnLabelRowSerializer(blind.annotator_labels(study, signed_in_user(request)), many=True).data)


class MyProgressApi(APIView):
    permission_classes = [Annotators]

    @extend_schema(responses=ProgressSerializer)
    def get(self, request: Request, study_id: int) -> Response:
        study = _own_study(request, study_id)
        return Response(ProgressSerializer(blind.annotator_progress(study, signed_in_user(request))).data)


# ---------------------------------------------------------------- curators


def _study(pk: int) -> Study:
    try:
        return tables.study_for_curators(pk)
    except Study.DoesNotExist:
        raise Http404 from None


def _detail(study: Study, request: Request) -> dict:
    study.strata = tables.strata_rows(study)
    study.member_rows = tables.member_rows(study, usernames=request.user.has_perm("annotation.manage_studies"))
    return StudyDetailSerializer(study).data


class StudiesApi(_ReadOrManage):
    """Studies, newest first, a page at a time (GET); a new study (POST)."""

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
