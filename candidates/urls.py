from .curation import urls as curation_urls
from .diffs import urls as diff_urls
from .import_jobs import urls as import_job_urls
from .ranking import urls as ranking_urls
from .releases import urls as release_urls
from .releases.interop import urls as interop_urls

app_name = "candidates"

urlpatterns = [
    *ranking_urls.urlpatterns,
    *import_job_urls.urlpatterns,
    *diff_urls.urlpatterns,
    *curation_urls.urlpatterns,
    *release_urls.urlpatterns,
    *interop_urls.urlpatterns,
    *curation_urls.candidate_urlpatterns,
]
