"""The run pages' routes, wired into the `evaluation` namespace by `evaluation/urls.py`."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.RunListView.as_view(), name="runs"),
    path("launch/", views.RunLaunchView.as_view(), name="launch"),
    path("runs/<number:pk>/", views.RunDetailView.as_view(), name="run"),
    path("runs/<number:pk>/progress.json", views.RunProgressView.as_view(), name="run-progress"),
    path("runs/<number:pk>/cancel/", views.RunCancelView.as_view(), name="run-cancel"),
    path("runs/<number:pk>/rerun/", views.RunRerunView.as_view(), name="run-rerun"),
    path("runs/<number:pk>/retry/", views.RunRetryView.as_view(), name="run-retry"),
    path("runs/<number:pk>/metrics/", views.RunMetricsView.as_view(), name="run-metrics"),
    path("runs/<number:pk>/compare/", views.RunCompareView.as_view(), name="run-compare"),
    path("runs/<number:pk>/atif.tar.gz", views.RunTrajectoriesView.as_view(export="atif"), name="run-atif"),
    path("runs/<number:pk>/inspect.eval", views.RunTrajectoriesView.as_view(export="inspect"), name="run-inspect"),
]
