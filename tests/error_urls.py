"""The site's URLs plus one page and one endpoint that fail, to see the 500 answers."""

from django.urls import path

from veriharm_site.urls import handler400, handler403, handler404, handler500  # noqa: F401
from veriharm_site.urls import urlpatterns as site_patterns


def fail(request):
    raise RuntimeError("a failure the test provokes")


urlpatterns = [path("broken/", fail), path("api/broken/", fail), *site_patterns]
