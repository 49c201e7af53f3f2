from django.urls import path

from . import api
from .curation import urls as curation_urls
from .import_jobs import urls as import_job_urls
from .releases import urls as release_urls
from .releases.interop import urls as interop_urls

urlpatterns = [
    path("candidates/", api.CandidateListApi.as_view(), name="api-candidates"),
    *import_job_urls.api_urlpatterns,
    path("candidates/export/", api.ExportApi.as_view(), name="api-candidates-export"),
    path("pipeline-format/schema/", api.PipelineFormatSchemaApi.as_view(), name="api-pipeline-format-schema"),
    *curation_urls.api_urlpatterns,
    *release_urls.api_urlpatterns,
    *interop_urls.api_urlpatterns,
    path("candidates/<path:external_id>/", api.CandidateDetailApi.as_view(), name="api-candidate-detail"),
]
