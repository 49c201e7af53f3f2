from django.urls import path

from . import views
from .curation import urls as curation_urls
from .import_jobs import urls as import_job_urls
from .releases import urls as release_urls
from .releases.interop import urls as interop_urls

app_name = "candidates"

urlpatterns = [
    path("", views.RankingView.as_view(), name="ranking"),
    *import_job_urls.urlpatterns,
    path("export.jsonl", views.ExportView.as_view(), name="export"),
    path("highlight.css", views.highlight_css, name="highlight-css"),
    *curation_urls.urlpatterns,
    *release_urls.urlpatterns,
    *interop_urls.urlpatterns,
    *curation_urls.candidate_urlpatterns,
]
