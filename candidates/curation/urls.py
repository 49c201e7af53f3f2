"""Routes of curation (the review queue, edits, the reports): pages (included by candidates/urls.py)
and API (by candidates/api_urls.py).

None of them starts with a candidate id: ids may contain slashes, and a path after an id
would be ambiguous with the candidate routes.
"""

from django.urls import path

from . import api, views
from .candidate_page import CandidateDetailView

urlpatterns = [
    path("review/", views.ReviewQueueView.as_view(), name="review-queue"),
    path("review/<number:rank>/", views.ReviewView.as_view(), name="review"),
    path("revise/<path:external_id>/", views.ReviseView.as_view(), name="revise"),
    path("reports/search/", views.SearchReportView.as_view(), name="search-report"),
    path("reports/descriptive/", views.DescriptiveView.as_view(), name="descriptive"),
]

api_urlpatterns = [
    path("decisions/", api.DecisionListApi.as_view(), name="api-decisions"),
    path("revisions/", api.RevisionListApi.as_view(), name="api-revisions"),
    path("review/queue/", api.ReviewQueueApi.as_view(), name="api-review-queue"),
    path("review/decisions/bulk/", api.ReviewDecisionsBulkApi.as_view(), name="api-review-decisions-bulk"),
    path("reports/search/", api.SearchReportApi.as_view(), name="api-search-report"),
    path("reports/descriptive/", api.DescriptiveApi.as_view(), name="api-descriptive"),
]

# The candidate page: last among the app's routes (included at the end by candidates/urls.py), as
# an id may contain slashes and would otherwise swallow the routes after it.
candidate_urlpatterns = [
    path("c/<path:external_id>/", CandidateDetailView.as_view(), name="detail"),
]
