"""The API of both sides: the annotator's blind endpoints under annotation/my/ (`labelling.api`) and
the studies and their results (`studies.api`)."""

from django.urls import path

from .labelling import api as labelling
from .studies import api as studies

urlpatterns = [
    # Annotators (blind).
    path("annotation/my/studies/", labelling.MyStudiesApi.as_view(), name="api-annotation-my-studies"),
    path("annotation/my/studies/<number:study_id>/next/", labelling.NextItemApi.as_view(), name="api-annotation-next"),
    path(
        "annotation/my/studies/<number:study_id>/progress/",
        labelling.MyProgressApi.as_view(),
        name="api-annotation-progress",
    ),
    path(
        "annotation/my/studies/<number:study_id>/labels/",
        labelling.MyLabelsApi.as_view(),
        name="api-annotation-my-labels",
    ),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/",
        labelling.ItemApi.as_view(),
        name="api-annotation-item",
    ),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/skip/",
        labelling.SkipApi.as_view(),
        name="api-annotation-skip",
    ),
    path(
        "annotation/my/studies/<number:study_id>/skipped/",
        labelling.MySkippedApi.as_view(),
        name="api-annotation-my-skipped",
    ),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/return/",
        labelling.ReturnApi.as_view(),
        name="api-annotation-return",
    ),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/label/",
        labelling.LabelApi.as_view(),
        name="api-annotation-label",
    ),
    # Curators.
    path("annotation/studies/", studies.StudiesApi.as_view(), name="api-annotation-studies"),
    path("annotation/studies/<number:pk>/", studies.StudyApi.as_view(), name="api-annotation-study"),
    path(
        "annotation/studies/<number:pk>/close/",
        studies.StudyStatusApi.as_view(action="close"),
        name="api-annotation-study-close",
    ),
    path(
        "annotation/studies/<number:pk>/reopen/",
        studies.StudyStatusApi.as_view(action="reopen"),
        name="api-annotation-study-reopen",
    ),
    path("annotation/studies/<number:pk>/items/", studies.StudyItemsApi.as_view(), name="api-annotation-study-items"),
    path(
        "annotation/studies/<number:pk>/results/",
        studies.StudyResultsApi.as_view(),
        name="api-annotation-study-results",
    ),
    path(
        "annotation/studies/<number:pk>/export/", studies.StudyExportApi.as_view(), name="api-annotation-study-export"
    ),
]
