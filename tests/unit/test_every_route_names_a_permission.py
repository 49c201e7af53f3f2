"""Every page and API endpoint checks a permission, not just a login (the admin has its own checks)."""

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from veriharm_site.permissions import RoleRequiredMixin

# Open to anyone (login, logout, a stylesheet, the icon) or to every signed-in user (the landing redirect,
# the API's own description).
OPEN = {"login/", "logout/", "candidates/highlight.css", "favicon.ico", "", "api/schema/", "api/docs/"}
# Checked by a scraper's token or address, never a role (evaluation/fleet/metrics_view.py).
SCRAPER_ONLY = {"metrics"}


def routes(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


def checks_a_role(callback) -> bool:
    cls = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if cls is None:
        return False
    if issubclass(cls, APIView):
        # Has_...: api_permission and api_any_permission; Read_..._or_write_...: api_read_or_write_permission.
        named = any(getattr(p, "__name__", "").startswith(("Has_", "Read_")) for p in cls.permission_classes)
        return named or cls.get_permissions is not APIView.get_permissions
    overrides = cls.get_permission_required is not RoleRequiredMixin.get_permission_required
    return issubclass(cls, RoleRequiredMixin) and (bool(getattr(cls, "permission_required", None)) or overrides)


def test_no_route_is_left_to_a_login_alone():
    unchecked = [
        route
        for route, callback in routes(get_resolver().url_patterns)
        if not route.startswith("admin/") and route not in OPEN | SCRAPER_ONLY and not checks_a_role(callback)
    ]
    assert unchecked == []
