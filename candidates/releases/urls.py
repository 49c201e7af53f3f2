"""Routes of releases: pages (included by candidates/urls.py) and API (by candidates/api_urls.py).
The exports for other harnesses have their routes in `interop/urls.py`."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("releases/", views.ReleaseListView.as_view(), name="releases"),
    path("releases/import/", views.BundleImportView.as_view(), name="release-import"),
    path("releases/<number:pk>/", views.ReleaseDetailView.as_view(), name="release"),
    path("releases/<number:pk>/freeze/", views.ReleaseFreezeView.as_view(), name="release-freeze"),
    path("releases/<number:pk>/description/", views.ReleaseDescriptionView.as_view(), name="release-description"),
    path("releases/<number:pk>/delete/", views.ReleaseDeleteView.as_view(), name="release-delete"),
    path("releases/<number:pk>/export.jsonl", views.ReleaseJsonlView.as_view(), name="release-jsonl"),
    path("releases/<number:pk>/bundle.tar.gz", views.ReleaseBundleView.as_view(), name="release-bundle"),
]

api_urlpatterns = [
    path("releases/", api.ReleaseListApi.as_view(), name="api-releases"),
    path("releases/import/", api.BundleImportApi.as_view(), name="api-release-import"),
    path("releases/<number:pk>/", api.ReleaseDetailApi.as_view(), name="api-release"),
    path("releases/<number:pk>/freeze/", api.ReleaseFreezeApi.as_view(), name="api-release-freeze"),
    path("releases/<number:pk>/export.jsonl", api.ReleaseJsonlApi.as_view(), name="api-release-jsonl"),
    path("releases/<number:pk>/bundle.tar.gz", api.ReleaseBundleApi.as_view(), name="api-release-bundle"),
]
