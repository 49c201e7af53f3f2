"""API of the annotator's blind labelling, under annotation/my/: their studies, progress, the next
item, an item, its label, skipping and returning, their skipped items and labels.

Every response is built from `labelling.selectors` through `labelling.serializers`, whose fields are
listed one by one; `.importlinter` forbids this package every module of `annotation.studies`.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from veriharm_site.permissions import api_permission, signed_in_user
from veriharm_site.queries import query_of

from ..models import Assignment, Study
from . import selectors as blind
from . import services
from .queries import NextItemQuery
from .serializers import (
    AnnotatorStudySerializer,
    BlindItemSerializer,
    LabelInputSerializer,
    NextItemSerializer,
    OwnLabelRowSerializer,
    ProgressSerializer,
    SavedLabelSerializer,
    SkipInputSerializer,
    SkippedItemSerializer,
)

Annotators = api_permission("annotation.annotate")


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
