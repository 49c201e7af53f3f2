from django.urls import path

from . import api

urlpatterns = [
    # Annotators (blind).
    path("annotation/my/studies/", api.MyStudiesApi.as_view(), name="api-annotation-my-studies"),
    path("annotation/my/studies/<number:study_id>/next/", api.NextItemApi.as_view(), name="api-annotation-next"),
    path(
        "annotation/my/studies/<number:study_id>/progress/", api.MyProgressApi.as_view(), name="api-annotation-progress"
    ),
    path("annotation/my/studies/<number:study_id>/labels/", api.MyLabelsApi.as_view(), name="api-annotation-my-labels"),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/", api.ItemApi.as_view(), name="api-annotation-item"
    ),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/skip/",
        api.SkipApi.as_view(),
        name="api-annotation-skip",
    ),
    path(
        "annotation/my/studies/<number:study_id>/skipped/", api.MySkippedApi.as_view(), name="api-annotation-my-skipped"
    ),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/return/",
        api.ReturnApi.as_view(),
        name="api-annotation-return",
    ),
    path(
        "annotation/my/studies/<number:study_id>/items/<str:token>/label/",
        api.LabelApi.as_view(),
        name="api-annotation-label",
    ),
    # Curators.
    path("annotation/studies/", api.StudiesApi.as_view(), name="api-annotation-studies"),
    path("annotation/studies/<number:pk>/", api.StudyApi.as_view(), name="api-annotation-study"),
    path(
        "annotation/studies/<number:pk>/close/",
        api.StudyStatusApi.as_view(action="close"),
        name="api-annotation-study-close",
    ),
    path(
        "annotation/studies/<number:pk>/reopen/",
        api.StudyStatusApi.as_view(action="reopen"),
        name="api-annotation-study-reopen",
    ),
    path("annotation/studies/<number:pk>/items/", api.StudyItemsApi.as_view(), name="api-annotation-study-items"),
    path("annotation/studies/<number:pk>/results/", api.StudyResultsApi.as_view(), name="api-annotation-study-results"),
    path("annotation/studies/<number:pk>/export/", api.StudyExportApi.as_view(), name="api-annotation-study-export"),
]
