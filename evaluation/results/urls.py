"""The routes of a trial's pages and of a candidate's results, wired into the `evaluation` namespace
by `evaluation/urls.py`."""

from django.urls import path

from . import views

urlpatterns = [
    path("trials/<number:pk>/", views.TrialDetailView.as_view(), name="trial"),
    path("trials/<number:pk>/final-state.tar.gz", views.TrialFinalStateView.as_view(), name="trial-final-state"),
    path("candidates/<path:external_id>/rerun/", views.CandidateRerunView.as_view(), name="candidate-rerun"),
    path("candidates/<path:external_id>/rescore/", views.CandidateRescoreView.as_view(), name="candidate-rescore"),
]
