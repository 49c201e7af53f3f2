"""The evaluation API's routes: each package's own list (runs, results) and the endpoints of its other packages."""

from django.urls import path

from .fleet import api as fleet_api
from .generation import api as generation_api
from .imported_runs import api as imported_api
from .results import api_urls as results_api_urls
from .runs import api_urls as runs_api_urls
from .v3ast import api as v3ast_api

urlpatterns = [
    *runs_api_urls.urlpatterns,
    *results_api_urls.urlpatterns,
    path("evaluation/runs/import/", imported_api.RunImportApi.as_view(), name="api-evaluation-run-import"),
    path("evaluation/runs/<number:pk>/v3ast/", v3ast_api.RunMatrixApi.as_view(), name="api-evaluation-v3ast-matrix"),
    path(
        "evaluation/runs/<number:pk>/v3ast/systems/<number:agent>/",
        v3ast_api.SystemScoresApi.as_view(),
        name="api-evaluation-v3ast-system",
    ),
    path("evaluation/generation/runs/", generation_api.GenerationLaunchApi.as_view(), name="api-generation-runs"),
    path(
        "evaluation/generation/runs/<number:pk>/", generation_api.GenerationRunApi.as_view(), name="api-generation-run"
    ),
    path(
        "evaluation/generation/runs/<number:pk>/cancel/",
        generation_api.GenerationCancelApi.as_view(),
        name="api-generation-run-cancel",
    ),
    path("evaluation/workers/", fleet_api.WorkerListApi.as_view(), name="api-evaluation-workers"),
]
