from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_safe


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Send each role to where its work is."""
    user = request.user
    if user.has_perm("candidates.view_ranking"):
        return redirect("candidates:ranking")
    if user.has_perm("annotation.annotate"):
        return redirect("annotation:home")
    return render(request, "no_role.html", status=403)


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page's link says; the icon is the static SVG."""
    return redirect(static("favicon.svg"), permanent=True)
