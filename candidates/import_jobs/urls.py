"""Routes of the import: pages (included by candidates/urls.py) and API (by candidates/api_urls.py)."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("import/", views.ImportView.as_view(), name="import"),
    path("import/jobs/<number:pk>/", views.ImportJobView.as_view(), name="import-job"),
]

api_urlpatterns = [
    path("candidates/import/", api.ImportApi.as_view(), name="api-candidates-import"),
    path("candidates/import/jobs/<number:pk>/", api.ImportJobApi.as_view(), name="api-candidates-import-job"),
]
