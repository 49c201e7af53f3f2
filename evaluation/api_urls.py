from django.urls import path

from . import api
from .fleet import api as fleet_api
from .generation import api as generation_api
from .imported_runs import api as imported_api
from .v3ast import api as v3ast_api

urlpatterns = [
    path("evaluation/runs/", api.RunListApi.as_view(), name="api-evaluation-runs"),
    path("evaluation/runs/<number:pk>/", api.RunDetailApi.as_view(), name="api-evaluation-run"),
    path("evaluation/runs/import/", imported_api.RunImportApi.as_view(), name="api-evaluation-run-import"),
    path("evaluation/runs/<number:pk>/progress/", api.RunProgressApi.as_view(), name="api-evaluation-run-progress"),
    path("evaluation/runs/<number:pk>/cancel/", api.RunCancelApi.as_view(), name="api-evaluation-run-cancel"),
    path("evaluation/runs/<number:pk>/rerun/", api.RunRerunApi.as_view(), name="api-evaluation-run-rerun"),
    path("evaluation/runs/<number:pk>/retry/", api.RunRetryApi.as_view(), name="api-evaluation-run-retry"),
    path("evaluation/runs/<number:pk>/metrics/", api.RunMetricsApi.as_view(), name="api-evaluation-run-metrics"),
    path("evaluation/runs/<number:pk>/compare/", api.RunCompareApi.as_view(), name="api-evaluation-run-compare"),
    path(
        "evaluation/runs/<number:pk>/atif.tar.gz",
        api.RunTrajectoriesApi.as_view(export="atif"),
        name="api-evaluation-run-atif",
    ),
    path(
        "evaluation/runs/<number:pk>/inspect.eval",
        api.RunTrajectoriesApi.as_view(export="inspect"),
        name="api-evaluation-run-inspect",
    ),
    path("evaluation/runs/<number:pk>/trials/", api.RunTrialsApi.as_view(), name="api-evaluation-run-trials"),
    path("evaluation/runs/<number:pk>/v3ast/", v3ast_api.RunMatrixApi.as_view(), name="api-evaluation-v3ast-matrix"),
    path(
        "evaluation/runs/<number:pk>/v3ast/systems/<number:agent>/",
        v3ast_api.SystemScoresApi.as_view(),
        name="api-evaluation-v3ast-system",
    ),
    path("evaluation/trials/<number:pk>/", api.TrialDetailApi.as_view(), name="api-evaluation-trial"),
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
    path("evaluation/agents/", api.AgentListApi.as_view(), name="api-evaluation-agents"),
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
