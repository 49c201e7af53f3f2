"""The evaluation pages' routes: each package's own list (runs, results) and the pages of its other packages."""

from django.urls import path

from .fleet import views as fleet_views
from .generation import views as generation_views
from .imported_runs import views as imported_views
from .results import urls as results_urls
from .runs import urls as runs_urls
from .v3ast import views as v3ast_views

app_name = "evaluation"

urlpatterns = [
    *runs_urls.urlpatterns,
    *results_urls.urlpatterns,
    path("import/", imported_views.RunImportView.as_view(), name="run-import"),
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
]
