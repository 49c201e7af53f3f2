"""Routes of the ranking: pages (included by candidates/urls.py) and API (by candidates/api_urls.py)."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("", views.RankingView.as_view(), name="ranking"),
    path("export.jsonl", views.ExportView.as_view(), name="export"),
]

api_urlpatterns = [
    path("candidates/", api.CandidateListApi.as_view(), name="api-candidates"),
    path("candidates/export/", api.ExportApi.as_view(), name="api-candidates-export"),
    path("pipeline-format/schema/", api.PipelineFormatSchemaApi.as_view(), name="api-pipeline-format-schema"),
]

# One candidate: last among the app's API routes (included at the end by candidates/api_urls.py), as
# an id may contain slashes and would otherwise swallow the routes after it.
candidate_api_urlpatterns = [
    path("candidates/<path:external_id>/", api.CandidateDetailApi.as_view(), name="api-candidate-detail"),
]
