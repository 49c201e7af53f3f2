"""Routes of curation: pages (included by candidates/urls.py) and API (by candidates/api_urls.py).

None of them starts with a candidate id: ids may contain slashes, and a path after an id
would be ambiguous with the candidate routes.
"""

from django.urls import path

from . import api, views

urlpatterns = [
    path("review/", views.ReviewQueueView.as_view(), name="review-queue"),
    path("review/<number:rank>/", views.ReviewView.as_view(), name="review"),
    path("revise/<path:external_id>/", views.ReviseView.as_view(), name="revise"),
    path("releases/", views.ReleaseListView.as_view(), name="releases"),
    path("releases/import/", views.BundleImportView.as_view(), name="release-import"),
    path("releases/<number:pk>/", views.ReleaseDetailView.as_view(), name="release"),
    path("releases/<number:pk>/freeze/", views.ReleaseFreezeView.as_view(), name="release-freeze"),
    path("releases/<number:pk>/description/", views.ReleaseDescriptionView.as_view(), name="release-description"),
    path("releases/<number:pk>/delete/", views.ReleaseDeleteView.as_view(), name="release-delete"),
    path("releases/<number:pk>/export.jsonl", views.ReleaseJsonlView.as_view(), name="release-jsonl"),
    path("releases/<number:pk>/bundle.tar.gz", views.ReleaseBundleView.as_view(), name="release-bundle"),
    path(
        "releases/<number:pk>/inspect.tar.gz",
        views.ReleaseHarnessExportView.as_view(harness="inspect"),
        name="release-inspect",
    ),
    path(
        "releases/<number:pk>/harbor.tar.gz",
        views.ReleaseHarnessExportView.as_view(harness="harbor"),
        name="release-harbor",
    ),
    path("reports/search/", views.SearchReportView.as_view(), name="search-report"),
    path("reports/descriptive/", views.DescriptiveView.as_view(), name="descriptive"),
]

api_urlpatterns = [
    path("decisions/", api.DecisionListApi.as_view(), name="api-decisions"),
    path("revisions/", api.RevisionListApi.as_view(), name="api-revisions"),
    path("review/queue/", api.ReviewQueueApi.as_view(), name="api-review-queue"),
    path("review/decisions/bulk/", api.ReviewDecisionsBulkApi.as_view(), name="api-review-decisions-bulk"),
    path("releases/", api.ReleaseListApi.as_view(), name="api-releases"),
    path("releases/import/", api.BundleImportApi.as_view(), name="api-release-import"),
    path("releases/<number:pk>/", api.ReleaseDetailApi.as_view(), name="api-release"),
    path("releases/<number:pk>/freeze/", api.ReleaseFreezeApi.as_view(), name="api-release-freeze"),
    path("releases/<number:pk>/export.jsonl", api.ReleaseJsonlApi.as_view(), name="api-release-jsonl"),
    path("releases/<number:pk>/bundle.tar.gz", api.ReleaseBundleApi.as_view(), name="api-release-bundle"),
    path(
        "releases/<number:pk>/inspect.tar.gz",
        api.ReleaseHarnessExportApi.as_view(harness="inspect"),
        name="api-release-inspect",
    ),
    path(
        "releases/<number:pk>/harbor.tar.gz",
        api.ReleaseHarnessExportApi.as_view(harness="harbor"),
        name="api-release-harbor",
    ),
    path("reports/search/", api.SearchReportApi.as_view(), name="api-search-report"),
    path("reports/descriptive/", api.DescriptiveApi.as_view(), name="api-descriptive"),
]
