"""The runs API's routes, wired in by `evaluation/api_urls.py`."""

from django.urls import path

from . import api

urlpatterns = [
    path("evaluation/runs/", api.RunListApi.as_view(), name="api-evaluation-runs"),
    path("evaluation/runs/<number:pk>/", api.RunDetailApi.as_view(), name="api-evaluation-run"),
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
    path("evaluation/agents/", api.AgentListApi.as_view(), name="api-evaluation-agents"),
]
