from django.urls import path

from . import api
from .curation import urls as curation_urls
from .releases import urls as release_urls
from .releases.interop import urls as interop_urls

urlpatterns = [
    path("candidates/", api.CandidateListApi.as_view(), name="api-candidates"),
    path("candidates/import/", api.ImportApi.as_view(), name="api-candidates-import"),
    path("candidates/import/jobs/<number:pk>/", api.ImportJobApi.as_view(), name="api-candidates-import-job"),
    path("candidates/export/", api.ExportApi.as_view(), name="api-candidates-export"),
    path("pipeline-format/schema/", api.PipelineFormatSchemaApi.as_view(), name="api-pipeline-format-schema"),
    *curation_urls.api_urlpatterns,
    *release_urls.api_urlpatterns,
    *interop_urls.api_urlpatterns,
    path("candidates/<path:external_id>/", api.CandidateDetailApi.as_view(), name="api-candidate-detail"),
]
