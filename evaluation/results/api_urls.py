"""The API routes of a trial and of a candidate's results, wired in by `evaluation/api_urls.py`."""

from django.urls import path

from . import api

urlpatterns = [
    path("evaluation/trials/<number:pk>/", api.TrialDetailApi.as_view(), name="api-evaluation-trial"),
    path(
        "evaluation/candidates/<path:external_id>/results/",
        api.CandidateResultsApi.as_view(),
        name="api-evaluation-candidate-results",
    ),
    path(
        "evaluation/candidates/<path:external_id>/rerun/",
        api.CandidateRerunApi.as_view(),
        name="api-evaluation-candidate-rerun",
    ),
    path(
        "evaluation/candidates/<path:external_id>/rescores/",
        api.CandidateRescoresApi.as_view(),
        name="api-evaluation-candidate-rescores",
    ),
]
