from .curation import urls as curation_urls
from .import_jobs import urls as import_job_urls
from .ranking import urls as ranking_urls
from .releases import urls as release_urls
from .releases.interop import urls as interop_urls

urlpatterns = [
    *ranking_urls.api_urlpatterns,
    *import_job_urls.api_urlpatterns,
    *curation_urls.api_urlpatterns,
    *release_urls.api_urlpatterns,
    *interop_urls.api_urlpatterns,
    *ranking_urls.candidate_api_urlpatterns,
]
