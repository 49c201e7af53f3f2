from django.urls import path

from . import views
from .fleet import views as fleet_views
from .generation import views as generation_views
from .imported_runs import views as imported_views
from .v3ast import views as v3ast_views

app_name = "evaluation"

urlpatterns = [
    path("", views.RunListView.as_view(), name="runs"),
    path("launch/", views.RunLaunchView.as_view(), name="launch"),
    path("import/", imported_views.RunImportView.as_view(), name="run-import"),
    path("runs/<number:pk>/", views.RunDetailView.as_view(), name="run"),
    path("runs/<number:pk>/progress.json", views.RunProgressView.as_view(), name="run-progress"),
    path("runs/<number:pk>/cancel/", views.RunCancelView.as_view(), name="run-cancel"),
    path("runs/<number:pk>/rerun/", views.RunRerunView.as_view(), name="run-rerun"),
    path("runs/<number:pk>/retry/", views.RunRetryView.as_view(), name="run-retry"),
    path("runs/<number:pk>/metrics/", views.RunMetricsView.as_view(), name="run-metrics"),
    path("runs/<number:pk>/compare/", views.RunCompareView.as_view(), name="run-compare"),
    path("runs/<number:pk>/atif.tar.gz", views.RunTrajectoriesView.as_view(export="atif"), name="run-atif"),
    path("runs/<number:pk>/inspect.eval", views.RunTrajectoriesView.as_view(export="inspect"), name="run-inspect"),
    path("trials/<number:pk>/", views.TrialDetailView.as_view(), name="trial"),
    path("trials/<number:pk>/final-state.tar.gz", views.TrialFinalStateView.as_view(), name="trial-final-state"),
    path("workers/", fleet_views.WorkerListView.as_view(), name="workers"),
    path("v3ast/", v3ast_views.V3astRunListView.as_view(), name="v3ast-runs"),
    path("runs/<number:pk>/v3ast/", v3ast_views.V3astMatrixView.as_view(), name="v3ast-matrix"),
    path("runs/<number:pk>/v3ast/systems/<number:agent>/", v3ast_views.V3astSystemView.as_view(), name="v3ast-system"),
    path("runs/<number:pk>/v3ast/tasks/<path:external_id>/", v3ast_views.V3astTaskView.as_view(), name="v3ast-task"),
    path("generation/", generation_views.GenerationRunListView.as_view(), name="generation-runs"),
    path("generation/launch/", generation_views.GenerationLaunchView.as_view(), name="generation-launch"),
    path("generation/runs/<number:pk>/", generation_views.GenerationRunView.as_view(), name="generation-run"),
    path(
        "generation/runs/<number:pk>/progress.json",
        generation_views.GenerationRunProgressView.as_view(),
        name="generation-run-progress",
    ),
    path(
        "generation/runs/<number:pk>/cancel/",
        generation_views.GenerationRunCancelView.as_view(),
        name="generation-run-cancel",
    ),
    path("generation/searches/<number:pk>/", generation_views.GenerationSearchView.as_view(), name="generation-search"),
    path(
        "generation/searches/<number:pk>/proposals/<number:number>.txt",
        generation_views.GenerationProposalTextView.as_view(),
        name="generation-proposal-text",
    ),
    path("candidates/<path:external_id>/rerun/", views.CandidateRerunView.as_view(), name="candidate-rerun"),
    path("candidates/<path:external_id>/rescore/", views.CandidateRescoreView.as_view(), name="candidate-rescore"),
]
