"""Routes of the exports for other harnesses: pages (included by candidates/urls.py) and API (by
candidates/api_urls.py), beside the release's own downloads under the same paths."""

from django.urls import path

from . import api, views

urlpatterns = [
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
]

api_urlpatterns = [
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
]
