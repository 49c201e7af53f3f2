from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import views
from .api_errors import ERROR_HANDLERS

api_patterns: list[URLPattern | URLResolver] = [
    path("", include("candidates.api_urls")),
    path("", include("evaluation.api_urls")),
    path("", include("annotation.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("candidates/", include("candidates.urls")),
    path("evaluation/", include("evaluation.urls")),
    path("annotation/", include("annotation.urls")),
    path("api/", include(api_patterns)),
    path("admin/", admin.site.urls),
    # For Prometheus: off unless a token or an allowed address is configured.
    path("metrics", include("evaluation.fleet.metrics_urls")),
]

handler400 = ERROR_HANDLERS["handler400"]
handler403 = ERROR_HANDLERS["handler403"]
handler404 = ERROR_HANDLERS["handler404"]
handler500 = ERROR_HANDLERS["handler500"]
